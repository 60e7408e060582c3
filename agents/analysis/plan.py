"""The analysis plan: sub-questions, each answerable by one SQL query, with their purpose.

The first sub-question is always the question itself, asked directly (the chain may well
answer it in one query; the others explain it). The LLM proposes the rest (a JSON reply;
``prompts/analysis_plan.j2``); they are validated and bounded: at most ``max_steps``
sub-questions in all, each with a non-empty question, duplicates dropped, ids renumbered
``q1``, ``q2``, ..., and a sub-question that left out a name the question says gets it
back (:func:`with_names`: "... for Aurora?"). A reply that is not a plan (garbage, no usable
step, a model error or timeout) gives a deterministic fallback plan: the question itself, and
for a diagnostic or predictive question a "by month" time series when the schema has a time
column. A predictive question's plan always holds its history (:func:`history_step`: the
measure by month over the data, the future period it names taken out), second, whatever the
model proposed: asked for "January 2026" as written, the model filters on it and the forecast
tool gets no series. A predictive question on a schema that shows no date or time column is
refused (:class:`AnalysisRefused`): there is nothing to forecast from.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Literal

from pydantic import BaseModel, Field

from agents.analysis.typing import QuestionTyping
from agents.llm.base import LLM, LLMError
from agents.templates import render

log = logging.getLogger(__name__)
MAX_QUESTION_CHARS = 400
TIME_TYPES = re.compile(r"\b(date|datetime|timestamp\w*|time)\b", re.I)
TIME_NAMES = re.compile(
    r"(?<![A-Za-z0-9])(\w*_)?(date|datetime|timestamp|time|year|month|quarter|week|day|"
    r"period|created|updated)(_\w*|s)?(?![A-Za-z0-9])|\w+_(at|on|dt)(?![A-Za-z0-9])",
    re.I,
)


class AnalysisRefused(ValueError):
    """The question cannot be analysed on this database; ``reason`` says why."""

    def __init__(self, question: str, reason: str) -> None:
        super().__init__(f"{reason} (question: {question!r})")
        self.question, self.reason = question, reason


class SubQuestion(BaseModel):
    """One step of a plan: a question one SQL query answers, and what it is for; ``series``:
    the time column the analyst asked one row per period of (a forecast's history, a
    monthly series; empty: not a series)."""

    id: str
    question: str
    purpose: str = ""
    measure: str = ""
    breakdowns: list[str] = Field(default_factory=list)
    period: str = ""
    series: str = ""


class AnalysisPlan(BaseModel):
    """The sub-questions of an analysis, who wrote them (``llm`` or ``fallback``) and notes on
    what validation changed."""

    question: str
    type: str
    steps: list[SubQuestion]
    by: Literal["llm", "fallback"] = "llm"
    notes: list[str] = Field(default_factory=list)


def time_columns(schema_text: str) -> list[str]:
    """The date/time columns the schema text shows (by type or by name), in order."""
    found: list[str] = []
    for line in schema_text.splitlines():
        words = line.strip().strip(",").split()
        if not words or words[0].upper() in {"CREATE", ")", "--", "PRIMARY", "FOREIGN"}:
            continue
        name = words[0].strip('"`[]')
        typed = len(words) > 1 and TIME_TYPES.search(words[1])
        if (typed or TIME_NAMES.fullmatch(name)) and name not in found:
            found.append(name)
    return found


def plan_schema(max_steps: int, *, direct: bool = True) -> dict[str, Any]:
    """The JSON reply the LLM is asked for (``max_steps - 1`` steps when the question itself
    is asked too, ``direct``)."""
    step = {
        "type": "object",
        "properties": {
            "question": {"type": "string"},
            "purpose": {"type": "string"},
            "measure": {"type": "string"},
            "breakdowns": {"type": "array", "items": {"type": "string"}},
            "period": {"type": "string"},
        },
        "required": ["question", "purpose"],
    }
    return {
        "type": "object",
        "properties": {
            "steps": {
                "type": "array",
                "items": step,
                "maxItems": max(1, max_steps - 1 if direct else max_steps),
            }
        },
        "required": ["steps"],
    }


def plan_analysis(
    question: str,
    typing: QuestionTyping,
    schema_text: str,
    llm: LLM,
    *,
    max_steps: int = 6,
    timeout_s: float | None = 120.0,
    direct: bool = True,
) -> AnalysisPlan:
    """A plan of at most ``max_steps`` sub-questions for ``question``; the LLM call gets at
    most ``timeout_s``. :class:`AnalysisRefused` for a predictive question on a schema with no
    time column. ``direct``: the question itself is the first step; without it only the
    model's sub-questions are asked (a goal that no one query answers, such as an
    InsightBench task's), and the question itself only in the fallback plan."""
    if max_steps < 1:
        raise ValueError(f"max_steps must be at least 1, got {max_steps}")
    times = time_columns(schema_text)
    if typing.type == "predictive" and not times:
        raise AnalysisRefused(
            question,
            "a forecast needs a date or time column, and the database's schema shows none",
        )
    if max_steps == 1:
        return fallback_plan(question, typing, times, 1, "one step allowed: the question")
    prompt = render(
        "analysis_plan.j2",
        question=question,
        type=typing.type,
        schema=schema_text,
        time_columns=times,
        max_steps=max_steps,
        direct=direct,
    )
    try:
        reply = llm.chat(
            [{"role": "user", "content": prompt}],
            temperature=0.0,
            max_tokens=160 * max_steps,
            json_schema=plan_schema(max_steps, direct=direct),
            timeout=timeout_s,
        )
        parsed = reply.completions[0].json()
    except LLMError as exc:  # garbage, timeout, cancelled
        return fallback_plan(question, typing, times, max_steps, f"the LLM gave no plan: {exc}")
    steps, notes = validated_steps(parsed, max_steps, first=question if direct else None)
    steps = [s.model_copy(update={"question": with_names(s.question, question)}) for s in steps]
    if len(steps) < (2 if direct else 1):
        reason = "; ".join(notes) or f"no usable step in {str(parsed)[:200]!r}"
        return fallback_plan(question, typing, times, max_steps, reason)
    if typing.type == "predictive":
        steps = with_history(steps, question, times[0], max_steps, after=1 if direct else 0)
    return AnalysisPlan(question=question, type=typing.type, steps=steps, notes=notes)


_FUTURE = re.compile(
    r"\s*\b(?:(?:in|for|of|during|by)\s+)?(?:"
    r"(?:january|february|march|april|may|june|july|august|september|october|november|"
    r"december)\s+\d{4}|next\s+(?:month|quarter|year)|"
    r"the\s+(?:month|quarter|year)\s+after\s+the\s+latest\s+data)\b",
    re.IGNORECASE,
)


_WHEN_PEAK = re.compile(  # "in which month of next year should we expect X to peak?"
    r"^(?:(?:in|during)\s+)?(?:which|what)\s+(?:month|quarter|week|day|year)s?\b.*?\b"
    r"(?:should|will|would|does|do|did|is|are|can)\s+(?:we\s+)?(?:expect\s+)?(?P<a>.+?)\s+"
    r"(?:to\s+)?(?:peak|be\s+(?:at\s+its\s+)?(?:highest|lowest|largest|smallest|strongest|"
    r"weakest)|bottom\s+out)\b|"
    r"^when\s+(?:will|would|does|do|did|is|are|should)\s+(?:we\s+expect\s+)?(?P<b>.+?)\s+"
    r"(?:to\s+)?(?:peak|be\s+(?:at\s+its\s+)?(?:highest|lowest|largest|smallest)|bottom\s+out)\b",
    re.IGNORECASE,
)


def history_step(question: str, time_column: str) -> SubQuestion:
    """The history a forecast is fitted to: the question's measure by month over every month
    the data holds. The future period it names is taken out ("in January 2026", "next
    month"): asked as written, the model filters on that period and finds no rows. A
    question of when a measure peaks is asked for the measure itself ("in which month should
    we expect Helix's revenue to peak" -> "Helix's revenue by month"): asked as written, the
    model selected the peak month alone, no measure to fit."""
    core = " ".join(_FUTURE.sub("", question).split()).strip(" ?.,")
    if (when := _WHEN_PEAK.search(core)) is not None:
        core = f"{when.group('a') or when.group('b')} by month"
    return SubQuestion(
        id="",
        question=f"{core}, as history: one row per month over every month the data holds, "
        "in time order",
        purpose="the history the forecast is fitted to",
        period=f"by month ({time_column})",
        series=time_column,
    )


def with_history(
    steps: list[SubQuestion], question: str, time_column: str, max_steps: int, *, after: int
) -> list[SubQuestion]:
    """``steps`` with the history step (:func:`history_step`) placed after the first
    ``after``, the last of the model's steps dropped when that would pass ``max_steps``;
    renumbered."""
    history = history_step(question, time_column)
    known = {" ".join(s.question.split()).lower() for s in steps}
    if history.question.lower() in known or max_steps <= after:
        return steps
    kept = [*steps[:after], history, *steps[after:]][:max_steps]
    return [step.model_copy(update={"id": f"q{i}"}) for i, step in enumerate(kept, 1)]


_NAME = re.compile(r"(?<![\w'-])([A-Z][A-Za-z]*[a-z][A-Za-z]*)(?:'s)?(?![\w-])")
_NOT_NAME = re.compile(
    r"what|why|which|how|when|where|who|whom|whose|is|are|was|were|did|does|do|the|an?|if|"
    r"in|of|for|by|and|or|to|compared|with|from|last|next|this|that|these|those|"
    r"january|february|march|april|may|june|july|august|september|october|november|"
    r"december|monday|tuesday|wednesday|thursday|friday|saturday|sunday",
    re.I,
)


def names_in(question: str) -> list[str]:
    """The proper names a question says (``Aurora`` of "Aurora's"): capitalised words
    after its first, not a question word, month or weekday, nor part of a hyphenated word
    ("Year-Over-Year"); a period (``FY2025``, ``Q2``) holds digits and is no name. A
    question in Title Case has none (its capitals say nothing)."""
    words = question.split()
    rest = " ".join(words[1:])
    capitalised = [w for w in words[1:] if w[:1].isupper()]
    if len(words) > 3 and len(capitalised) > len(words[1:]) / 2:
        return []
    found = [m.group(1) for m in _NAME.finditer(rest)]
    return list(dict.fromkeys(w for w in found if not _NOT_NAME.fullmatch(w)))


def with_names(sub_question: str, question: str) -> str:
    """``sub_question`` with the question's first name appended ("... for Aurora?") when
    it says none of the question's names: the planner's "gross profit for each region in
    FY2025 Q2" for "Aurora's gross profit" was answered from another brand's table. A
    sub-question naming one of them (another brand it compares with) is kept as written;
    only the first name is added (a second one, "Europe", would narrow "each region")."""
    names = names_in(question)
    if not names or any(re.search(rf"\b{re.escape(n)}\b", sub_question, re.I) for n in names):
        return sub_question
    return f"{sub_question.rstrip(' ?.')} for {names[0]}?"


def validated_steps(
    parsed: Any, max_steps: int, *, first: str | None
) -> tuple[list[SubQuestion], list[str]]:
    """The question ``first`` asked directly (None: not asked), then the usable steps of a
    parsed reply (renumbered, at most ``max_steps`` in all), and notes on what was dropped."""
    raw = parsed.get("steps") if isinstance(parsed, dict) else parsed
    if not isinstance(raw, list):
        return [], [f"the reply has no list of steps: {str(parsed)[:200]!r}"]
    steps: list[SubQuestion] = []
    seen: set[str] = set()
    if first is not None:
        steps.append(SubQuestion(id="q1", question=first, purpose="the question asked directly"))
        seen.add(" ".join(first.split()).lower())
    notes: list[str] = []
    for index, item in enumerate(raw, 1):
        text = item.get("question") if isinstance(item, dict) else None
        if not isinstance(text, str) or not text.strip():
            notes.append(f"step {index} has no question: {str(item)[:120]!r}")
            continue
        text = " ".join(text.split())[:MAX_QUESTION_CHARS]
        if text.lower() in seen:
            notes.append(f"step {index} repeats an earlier question")
            continue
        if len(steps) == max_steps:
            notes.append(f"{len(raw) - index + 1} steps past the limit of {max_steps} dropped")
            break
        seen.add(text.lower())
        steps.append(
            SubQuestion(
                id=f"q{len(steps) + 1}",
                question=text,
                purpose=_text(item.get("purpose")),
                measure=_text(item.get("measure")),
                breakdowns=_texts(item.get("breakdowns")),
                period=_text(item.get("period")),
            )
        )
    return steps, notes


def fallback_plan(
    question: str, typing: QuestionTyping, times: list[str], max_steps: int, reason: str
) -> AnalysisPlan:
    """The deterministic plan: the question itself, and a monthly time series for a
    diagnostic or predictive question when the schema has a time column."""
    log.info("analysis plan: fallback (%s)", reason)
    steps = [SubQuestion(id="q1", question=question, purpose="the question asked directly")]
    if typing.type == "predictive" and times and max_steps > 1:
        steps = with_history(steps, question, times[0], max_steps, after=1)
    elif typing.type == "diagnostic" and times and max_steps > 1:
        series = f"{question.rstrip(' ?.')}: one row per month, in time order (by month)"
        steps.append(
            SubQuestion(
                id="q2",
                question=series,
                purpose="the time series, to see the change over time",
                breakdowns=[],
                period=f"by month ({times[0]})",
                series=times[0],
            )
        )
    return AnalysisPlan(
        question=question,
        type=typing.type,
        steps=steps,
        by="fallback",
        notes=[f"fallback plan: {reason}"],
    )


def _text(value: Any) -> str:
    return " ".join(str(value).split())[:200] if isinstance(value, str | int | float) else ""


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        value = [value]
    return [t for t in (_text(v) for v in value or [] if v is not None) if t][:6]
