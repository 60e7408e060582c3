"""The LLM reading one section: :class:`LLMSectionExtractor`.

One call per section (or part of a long section), the answer constrained by
:data:`ANSWER_SCHEMA` to the five lists the system prompt names (terms, metrics, rules, value
mappings, taxonomies). An answer that is not JSON, or not an object of lists of objects, is a
:class:`SectionFailed`: the run counts that section as failed and goes on with the others.
Prompts: ``prompts/extract_system.j2`` and ``prompts/extract_section.j2``.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Protocol

from agents.llm.base import LLM, LLMCancelledError, LLMError, Message
from agents.templates import render

log = logging.getLogger(__name__)
KINDS = ("terms", "metrics", "rules", "value_mappings", "taxonomies")
_TEXT = {"type": "string"}
_WORDS = {"type": "array", "items": _TEXT}
_LEVEL = {
    "type": "object",
    "properties": {"table": _TEXT, "column": _TEXT},
    "required": ["table", "column"],
}


def _items(**properties: Any) -> dict[str, Any]:
    return {
        "type": "array",
        "items": {"type": "object", "properties": properties, "required": list(properties)},
    }


ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "terms": _items(term=_TEXT, aliases=_WORDS, meaning=_TEXT, table=_TEXT, column=_TEXT),
        "metrics": _items(name=_TEXT, aliases=_WORDS, formula=_TEXT, description=_TEXT),
        "rules": _items(name=_TEXT, rule=_TEXT, time=_TEXT, role=_TEXT, region=_TEXT),
        "value_mappings": _items(phrase=_TEXT, table=_TEXT, column=_TEXT, value=_TEXT),
        "taxonomies": _items(name=_TEXT, levels={"type": "array", "items": _LEVEL}),
    },
    "required": list(KINDS),
}


class SectionFailed(RuntimeError):
    """The model gave no usable answer for a section; the message says why."""


class SectionExtractor(Protocol):
    calls: int

    def extract(
        self, *, database: str, schema: str, document: str, locator: str, text: str
    ) -> dict[str, list[dict[str, Any]]]: ...


class LLMSectionExtractor:
    """Asks ``llm`` for the knowledge of one section (one call each)."""

    def __init__(self, llm: LLM, *, max_tokens: int = 900, timeout: float | None = None):
        self.llm, self.max_tokens, self.timeout = llm, max_tokens, timeout
        self.calls = 0

    def extract(
        self, *, database: str, schema: str, document: str, locator: str, text: str
    ) -> dict[str, list[dict[str, Any]]]:
        messages: list[Message] = [
            {"role": "system", "content": render("extract_system.j2")},
            {
                "role": "user",
                "content": render(
                    "extract_section.j2",
                    database=database,
                    schema=schema,
                    document=document,
                    locator=locator,
                    text=text,
                ),
            },
        ]
        self.calls += 1
        try:
            result = self.llm.chat(
                messages,
                max_tokens=self.max_tokens,
                json_schema=ANSWER_SCHEMA,
                timeout=self.timeout,
            )
            answer = result.completions[0].json()
        except LLMCancelledError:
            raise
        except LLMError as exc:
            raise SectionFailed(f"no usable answer: {exc}") from None
        return checked_answer(answer)


def checked_answer(answer: Any) -> dict[str, list[dict[str, Any]]]:
    """The answer's five lists (missing ones empty); :class:`SectionFailed` when it is not a
    JSON object of lists of objects."""
    if isinstance(answer, str):
        try:
            answer = json.loads(answer)
        except json.JSONDecodeError as exc:
            raise SectionFailed(f"not JSON: {exc.msg}") from None
    if not isinstance(answer, dict):
        raise SectionFailed(f"not a JSON object but {type(answer).__name__}")
    checked: dict[str, list[dict[str, Any]]] = {}
    for kind in KINDS:
        items = answer.get(kind) or []
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise SectionFailed(f"{kind!r} is not a list of objects")
        checked[kind] = items
    return checked
