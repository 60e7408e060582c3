"""The LLM writes the question of a synthetic statement.

:class:`QuestionWriter` asks the model once per variant, with the source question, its SQL,
the change in words and the new SQL (prompts: ``agents/learn/synth/prompts/
synth_question_system.j2`` and ``synth_question.j2``), the answer constrained by a JSON
schema to ``{"question": ...}``. A reply that is not a usable question (empty, too short or
too long, SQL, the source question unchanged, or one that leans on the prompt: "the same
scenario as the original query") is refused with the reason before any back-check: the pair
is dropped and counted as ``question failed``.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from agents.learn.synth.variants import Variant
from agents.llm.base import LLM, LLMCancelledError, LLMError, Message
from agents.templates import render

log = logging.getLogger(__name__)

MIN_CHARS, MAX_CHARS = 8, 300
_SQL = re.compile(r"```|\bselect\b.+\bfrom\b", re.IGNORECASE | re.DOTALL)
# what only the writer's prompt shows: "... with the same scenario as the original query"
# (the 1.5B on AutoFin: such a question cannot be answered alone and failed its back-check
# after a whole chain call, about a minute on two cores)
_PROMPT_WORDS = re.compile(
    r"\b(?:original|previous|source|new|above|given)\s+(?:query|question|sql|statement)\b"
    r"|\b(?:as|than) (?:in )?the original\b",
    re.IGNORECASE,
)
_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"question": {"type": "string", "minLength": MIN_CHARS, "maxLength": MAX_CHARS}},
    "required": ["question"],
}


class QuestionError(ValueError):
    """The model gave no usable question; carries the variant's SQL and the reply."""

    def __init__(self, sql: str, reason: str, reply: str = "") -> None:
        super().__init__(f"no question for {sql[:200]!r}: {reason} (reply {reply[:200]!r})")
        self.reason = reason


class QuestionWriter:
    """Writes a variant's question with ``llm``; counts its calls."""

    def __init__(self, llm: LLM, *, max_tokens: int = 120, timeout: float | None = None):
        self.llm, self.max_tokens, self.timeout = llm, max_tokens, timeout
        self.calls = 0

    def write(self, question: str, variant: Variant, columns: list[str]) -> str:
        """The question ``variant.sql`` answers; :class:`QuestionError` when the model gives
        none (see the module docstring)."""
        messages: list[Message] = [
            {"role": "system", "content": render("synth_question_system.j2")},
            {
                "role": "user",
                "content": render(
                    "synth_question.j2",
                    question=question,
                    source_sql=variant.source_sql,
                    change=variant.change,
                    sql=variant.sql,
                    columns=columns,
                ),
            },
        ]
        self.calls += 1
        try:
            result = self.llm.chat(
                messages, max_tokens=self.max_tokens, json_schema=_SCHEMA, timeout=self.timeout
            )
            reply = result.completions[0].text
            answer = result.completions[0].json()
        except LLMCancelledError:
            raise
        except LLMError as exc:
            raise QuestionError(variant.sql, f"no JSON answer: {exc}") from None
        text = answer.get("question") if isinstance(answer, dict) else None
        written = " ".join(str(text or "").split())
        reason = _unusable(written, question)
        if reason is not None:
            raise QuestionError(variant.sql, reason, reply)
        return written


def _unusable(written: str, source: str) -> str | None:
    if len(written) < MIN_CHARS:
        return "too short"
    if len(written) > MAX_CHARS:
        return "too long"
    if _SQL.search(written):
        return "SQL instead of a question"
    if written.casefold().strip(" ?.") == source.casefold().strip(" ?."):
        return "the source question unchanged"
    mention = _PROMPT_WORDS.search(written)
    if mention is not None:
        return f"refers to what only the prompt shows ({mention.group(0)!r})"
    return None
