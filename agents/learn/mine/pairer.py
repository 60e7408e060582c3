"""The LLM, only where a question's phrase must be paired with an element and alignment
cannot tell: "what is the **size** of texas" ↔ ``state.area``.

A :class:`Pairer` gets the question, its SQL, the items left unpaired (a column, a value, a
formula) and the phrases it may choose from (the question's uncovered n-grams); it returns
item key → phrase. :class:`LLMPairer` asks the model once per question, with the answer
constrained by a JSON schema to those phrases (or ``""``), and keeps only answers that are
one of the offered phrases, given to one item each. Prompts: ``agents/learn/prompts/
mine_pair_system.j2`` and ``mine_pair.j2``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agents.llm.base import LLM, LLMError, Message
from agents.templates import render

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PairItem:
    """An element to name: ``key`` (``i1``...), ``kind`` (column, value, formula), ``label``
    (``state.area``) and a ``hint`` (a description, the column of a value)."""

    key: str
    kind: str
    label: str
    hint: str = ""


class Pairer(Protocol):
    calls: int

    def pair(
        self, question: str, sql: str, items: Sequence[PairItem], phrases: Sequence[str]
    ) -> dict[str, str]: ...


class LLMPairer:
    """Pairs items with phrases by asking ``llm`` (one call per question)."""

    def __init__(self, llm: LLM, *, max_tokens: int = 200, timeout: float | None = None):
        self.llm, self.max_tokens, self.timeout = llm, max_tokens, timeout
        self.calls = 0
        self.failures = 0

    def pair(
        self, question: str, sql: str, items: Sequence[PairItem], phrases: Sequence[str]
    ) -> dict[str, str]:
        if not items or not phrases:
            return {}
        messages: list[Message] = [
            {"role": "system", "content": render("mine_pair_system.j2")},
            {
                "role": "user",
                "content": render(
                    "mine_pair.j2", question=question, sql=sql, items=items, phrases=list(phrases)
                ),
            },
        ]
        self.calls += 1
        try:
            result = self.llm.chat(
                messages,
                max_tokens=self.max_tokens,
                json_schema=_schema(items, phrases),
                timeout=self.timeout,
            )
            answer = result.completions[0].json()
        except LLMError as exc:
            self.failures += 1
            log.warning("pairer: no usable answer for %r: %s", question, exc)
            return {}
        return _kept(answer, items, phrases)


def _schema(items: Sequence[PairItem], phrases: Sequence[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "pairs": {
                "type": "array",
                "maxItems": len(items),
                "items": {
                    "type": "object",
                    "properties": {
                        "item": {"enum": [i.key for i in items]},
                        "phrase": {"enum": [*phrases, ""]},
                    },
                    "required": ["item", "phrase"],
                },
            }
        },
        "required": ["pairs"],
    }


def _kept(answer: Any, items: Sequence[PairItem], phrases: Sequence[str]) -> dict[str, str]:
    """Valid pairs only: a known item, an offered phrase, each phrase to one item."""
    keys = {i.key for i in items}
    offered = {p.casefold(): p for p in phrases}
    pairs = answer.get("pairs") if isinstance(answer, dict) else None
    kept: dict[str, str] = {}
    taken: set[str] = set()
    for pair in pairs if isinstance(pairs, list) else []:
        if not isinstance(pair, dict):
            continue
        key, phrase = pair.get("item"), str(pair.get("phrase") or "").strip().casefold()
        if key in keys and key not in kept and phrase in offered and phrase not in taken:
            kept[str(key)] = offered[phrase]
            taken.add(phrase)
    return kept
