"""Question typing: is a question a lookup, or a descriptive, diagnostic, predictive or
prescriptive analysis question?

Rules come first (cue words: "why" and "driver" are diagnostic, "forecast" and "next quarter"
predictive, "should" and "recommend" prescriptive, "trend" and "breakdown" descriptive), and
a few phrases decide alone whatever else the question says (:data:`DECISIVE`: "if the trend
continues, how much will ..." is a forecast, though it says "trend"; "should we expect" is
one, though it says "should"); the LLM is asked (a JSON reply) only when the rules are
unsure: no cue at all, or cues of several types. A reply that is not one of the five types
falls back to the rules, with a note saying so. Only a lookup keeps the one-SQL path; the
others go to the analyst.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Literal

from pydantic import BaseModel, Field

from agents.llm.base import LLM, LLMError
from agents.templates import render

log = logging.getLogger(__name__)
QuestionType = Literal["lookup", "descriptive", "diagnostic", "predictive", "prescriptive"]
TYPES: tuple[str, ...] = ("lookup", "descriptive", "diagnostic", "predictive", "prescriptive")

# analysis types, strongest first: a question with cues of several is unsure, and the rules
# pick the first of them
CUES: dict[str, re.Pattern[str]] = {
    "prescriptive": re.compile(
        r"\b(should|recommend\w*|where to (cut|invest|focus)|optimi[sz]\w*|"
        r"what (can|could) we do|best (way|option|action)|to maximi[sz]e|to minimi[sz]e|"
        r"prioriti[sz]e|worth (it|doing))\b",
        re.I,
    ),
    "predictive": re.compile(
        r"\b(forecast\w*|predict\w*|projection|project(ed)?|next (month|quarter|year|week)|"
        r"will|expect(ed)? to|going to|in the coming|outlook)\b",
        re.I,
    ),
    "diagnostic": re.compile(
        r"\b(why|drivers?|driven|drove|causes?|caused|reasons?|explain\w*|"
        r"what (led|contributed) to|due to|root cause|account(s|ed)? for the)\b",
        re.I,
    ),
    "descriptive": re.compile(
        r"\b(trends?|distribution|breakdown|broken down|compare[ds]?|comparison|overview|"
        r"over time|pattern|evolv\w*|changed?|seasonal\w*|summari[sz]e|analy[sz]e)\b",
        re.I,
    ),
}
DECISIVE: dict[str, re.Pattern[str]] = {
    "predictive": re.compile(
        r"\b(if (the|this|that|current|recent) trends? (continues?|holds?|persists?)|"
        r"(should|can|do|would) we expect|(month|quarter|year) after the (latest|last) data)\b",
        re.I,
    ),
}
LOOKUP_CUE = re.compile(
    r"^\s*(how (many|much)|what (is|are|was|were)|which|who|list|show|give|find|count|"
    r"name|when|where|return|get|display)\b",
    re.I,
)


class QuestionTyping(BaseModel):
    """A question's type, who decided it (``rules`` or ``llm``) and why."""

    type: QuestionType
    by: Literal["rules", "llm"] = "rules"
    reason: str = ""
    cues: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    @property
    def is_lookup(self) -> bool:
        return self.type == "lookup"


def rule_typing(question: str) -> tuple[QuestionTyping, bool]:
    """The rules' typing of ``question`` and whether they are sure of it."""
    for kind, pattern in DECISIVE.items():
        hit = pattern.search(question)
        if hit:
            word = hit.group(0)
            cues = [f"{kind}: {word!r}"]
            return QuestionTyping(type=kind, reason=f"decisive cue {word!r}", cues=cues), True
    matched: list[tuple[str, str]] = []
    for kind, pattern in CUES.items():
        hit = pattern.search(question)
        if hit:
            matched.append((kind, hit.group(0)))
    cues = [f"{kind}: {word!r}" for kind, word in matched]
    if len(matched) == 1:
        kind, word = matched[0]
        return QuestionTyping(type=kind, reason=f"cue {word!r}", cues=cues), True
    if matched:
        kind, word = matched[0]
        reason = f"cues of {len(matched)} types; the strongest is {kind} ({word!r})"
        return QuestionTyping(type=kind, reason=reason, cues=cues), False
    if LOOKUP_CUE.search(question):
        return QuestionTyping(type="lookup", reason="a direct question, no analysis cue"), True
    return QuestionTyping(type="lookup", reason="no cue of any type"), False


def typing_schema() -> dict[str, Any]:
    """The JSON reply the LLM is asked for."""
    return {
        "type": "object",
        "properties": {
            "type": {"type": "string", "enum": list(TYPES)},
            "reason": {"type": "string"},
        },
        "required": ["type", "reason"],
    }


def classify_question(
    question: str, llm: LLM | None = None, *, timeout_s: float | None = 60.0
) -> QuestionTyping:
    """Type ``question``: by the rules, or by ``llm`` when the rules are unsure."""
    typed, sure = rule_typing(question)
    if sure or llm is None:
        return typed
    messages = [{"role": "user", "content": render("analysis_typing.j2", question=question)}]
    try:
        reply = llm.chat(
            messages, temperature=0.0, max_tokens=96, json_schema=typing_schema(), timeout=timeout_s
        )
        parsed = reply.completions[0].json()
    except LLMError as exc:  # garbage (LLMOutputError) included
        return _with_note(typed, f"the LLM's typing failed ({exc}); the rules decided")
    kind = str(parsed.get("type", "")).strip().lower() if isinstance(parsed, dict) else ""
    if kind not in TYPES:
        note = f"the LLM's typing {str(parsed)[:120]!r} is not a type; the rules decided"
        return _with_note(typed, note)
    reason = str(parsed.get("reason", ""))[:300]
    return QuestionTyping(type=kind, by="llm", reason=reason, cues=typed.cues)


def _with_note(typed: QuestionTyping, note: str) -> QuestionTyping:
    log.info("question typing: %s", note)
    return typed.model_copy(update={"notes": [*typed.notes, note]})
