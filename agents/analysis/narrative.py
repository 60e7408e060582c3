"""The narrative: a short answer, findings citing their evidence, caveats; checked.

The LLM writes it from the evidence tables and the computed facts (a JSON reply,
``prompts/analysis_narrative.j2``). Then every finding goes through the number check
(:mod:`agents.analysis.numbers`): a finding that cites no evidence of this analysis, or
states a number found neither in the rows of the evidence it cites nor in the tool facts
(nor in the question), is dropped and recorded with the offending number. A short answer
that fails the check, or that the model wrote without any usable evidence, is replaced by
the first finding kept. A finding whose numbers its cited evidence does not hold, but another
query's rows do, cites that query instead (the model often cites the wrong id). A reply cut
off by its token budget keeps the findings the model completed
(:mod:`agents.analysis.partial_json`). When the reply is unusable or no
finding survives, the findings are the tools' own one-sentence summaries (made only of their
numbers), and a caveat says so. Each finding kept gets a chart of its first evidence.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.analysis.charts import chart_spec
from agents.analysis.drivers import PURPOSE as DRIVERS
from agents.analysis.facts import PeriodChange, ToolFacts, shown
from agents.analysis.models import DroppedFinding, Evidence, Finding
from agents.analysis.numbers import known_numbers, numbers_in_text, unsupported_number
from agents.analysis.partial_json import parse_cut_json
from agents.llm.base import LLM, LLMError, LLMOutputError
from agents.templates import render

NO_ROWS = "No finding could be made: no query returned rows."
NO_ROWS_REASON = "no query returned rows"
log = logging.getLogger(__name__)
PROMPT_ROWS = 12
PROMPT_CELL_CHARS = 60
MAX_FINDINGS = 8
ASKED_FINDINGS = 4  # the prompt asks for at most this many: each costs decode time


@dataclass
class Narrative:
    """The checked narrative; ``by`` is ``llm`` when the model's findings were kept,
    ``facts`` when the findings are the tools' summaries."""

    short_answer: str
    findings: list[Finding] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)
    dropped: list[DroppedFinding] = field(default_factory=list)
    by: str = "llm"
    prompt_tokens: int = 0
    completion_tokens: int = 0


def narrative_schema() -> dict[str, Any]:
    finding = {
        "type": "object",
        "properties": {
            "text": {"type": "string"},
            "evidence": {"type": "array", "items": {"type": "string"}},
            "numbers": {"type": "array", "items": {"type": "number"}},
        },
        "required": ["text", "evidence"],
    }
    return {
        "type": "object",
        "properties": {
            "short_answer": {"type": "string"},
            "findings": {"type": "array", "items": finding, "maxItems": ASKED_FINDINGS},
            "caveats": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["short_answer", "findings"],
    }


def write_narrative(
    question: str,
    question_type: str,
    evidence: Sequence[Evidence],
    facts: Sequence[ToolFacts],
    llm: LLM,
    *,
    timeout_s: float | None = 180.0,
    max_tokens: int = 700,
) -> Narrative:
    """The checked narrative of an analysis of ``question`` (no model call when no
    evidence holds a row: there is nothing to narrate, :func:`checked`)."""
    if not _has_rows(evidence):
        return checked(question, {}, evidence, facts, Narrative(short_answer=""))
    prompt = render(
        "analysis_narrative.j2",
        question=question,
        type=question_type,
        evidence=[_shown(e) for e in evidence],
        facts=[{"evidence": f.evidence, "summary": f.summary(), **_plain(f)} for f in facts],
        max_findings=ASKED_FINDINGS,
        driver=driver.summary() if (driver := _driver_fact(evidence, facts)) else "",
    )
    narrative = Narrative(short_answer="")
    try:
        reply = llm.chat(
            [{"role": "user", "content": prompt}],
            temperature=0.0,
            max_tokens=max_tokens,
            json_schema=narrative_schema(),
            timeout=timeout_s,
        )
        narrative.prompt_tokens, narrative.completion_tokens = (
            reply.prompt_tokens,
            reply.completion_tokens,
        )
        parsed = _reply_json(reply.completions[0].text, narrative)
        if not isinstance(parsed, dict):
            raise LLMError(f"not a narrative: {str(parsed)[:200]!r}")
    except LLMError as exc:  # garbage, timeout, cancelled
        log.info("analysis narrative: the model's reply is unusable: %s", exc)
        parsed = {}
        narrative.caveats.append(f"the model wrote no usable narrative ({str(exc)[:160]})")
    narrative = checked(question, parsed, evidence, facts, narrative)
    narrative.short_answer = with_driver(narrative.short_answer, driver)
    return narrative


def _driver_fact(evidence: Sequence[Evidence], facts: Sequence[ToolFacts]) -> PeriodChange | None:
    """The first fact when it is the drivers' change by segment (the facts put it first,
    :func:`agents.analysis.compute.compute_facts`) and names a segment, else None."""
    drivers = {e.id for e in evidence if e.purpose == DRIVERS}
    first = facts[0] if facts else None
    if isinstance(first, PeriodChange) and first.dimension and first.evidence in drivers:
        return first if first.contributions else None
    return None


def with_driver(short_answer: str, fact: PeriodChange | None) -> str:
    """``short_answer``, led by the segment that moved most in the drivers' ``fact`` unless
    it names every part of it already ("Europe / Aurora 5": both): the tools found it on
    the data, and a small model often shortens it to one part or picks another result's
    lowest value."""
    if fact is None:
        return short_answer
    top = fact.contributions[0]
    parts = [p for p in top.segment.split(" / ") if p]
    if all(re.search(rf"(?<!\w){re.escape(part)}(?!\w)", short_answer, re.I) for part in parts):
        return short_answer  # "NA" in "finance" is not the segment NA
    lead = (
        f"{' and '.join(parts)} moved most: {fact.measure} {shown(top.previous)} in "
        f"{fact.previous_period}, {shown(top.last)} in {fact.last_period} "
        f"({shown(top.change, '+g')})."
    )
    return f"{lead} {short_answer}".strip()


def checked(
    question: str,
    parsed: dict[str, Any],
    evidence: Sequence[Evidence],
    facts: Sequence[ToolFacts],
    narrative: Narrative,
) -> Narrative:
    """``parsed`` (the model's JSON) through the number check, into ``narrative``. With no
    row in any evidence there is nothing to claim: the model's findings are dropped and
    the short answer says so (the 1.5B answered "driven by the model 'Model A' in the
    region 'Region B'" from two empty results, a claim with no number to check)."""
    if not _has_rows(evidence):
        return _nothing_returned(parsed, narrative)
    by_id = {e.id: e for e in evidence if e.ok}
    fact_numbers = [n for f in facts for n in known_numbers(f.numbers())]
    asked = known_numbers([question])
    raw = _list(parsed.get("findings"))
    for item in raw[:MAX_FINDINGS]:
        if not isinstance(item, dict) or not str(item.get("text", "")).strip():
            continue
        text = " ".join(str(item["text"]).split())
        cited = [str(i) for i in _list(item.get("evidence")) if str(i) in by_id]
        stated = [n for n in _list(item.get("numbers")) if isinstance(n, int | float)]
        base = fact_numbers + asked
        offending = unsupported_number(text, _held(cited, by_id) + base) if cited else None
        if not cited or offending is not None:
            recited = _supporting(text, by_id, base, facts)
            if recited:
                cited, offending = recited, None
        if not cited:
            narrative.dropped.append(
                DroppedFinding(
                    text=text, evidence=_strs(item.get("evidence")), reason="cites no evidence"
                )
            )
            continue
        known = _held(cited, by_id) + base
        if offending is not None:
            narrative.dropped.append(
                DroppedFinding(
                    text=text,
                    evidence=cited,
                    number=offending,
                    reason=f"{offending} is in neither its evidence nor the computed facts",
                )
            )
            continue
        # the numbers it says it uses: those the check supports (its text's when none)
        used = [n for n in stated if unsupported_number(f"{n:g}", known) is None]
        used = used or [v for _, v, _ in numbers_in_text(text)]
        narrative.findings.append(Finding(text=text, evidence=cited, numbers=used))
    if not narrative.findings and facts:
        if raw:
            narrative.caveats.append(
                "no finding of the model passed the number check; the findings are the "
                "computed facts"
            )
        narrative.by = "facts"
        narrative.findings = fact_findings(facts)
    elif not narrative.findings:
        narrative.by = "none"
    all_known = _held(list(by_id), by_id) + fact_numbers + asked
    short = " ".join(str(parsed.get("short_answer", "")).split())
    offending = unsupported_number(short, all_known) if short else None
    if offending is not None:
        narrative.dropped.append(
            DroppedFinding(text=short, number=offending, reason="short answer: unsupported number")
        )
    if not short or offending is not None or not by_id:  # nothing ran: nothing to claim
        short = narrative.findings[0].text if narrative.findings else "No finding could be made."
    narrative.short_answer = short
    _add_caveats(parsed, narrative)
    chart_findings(narrative.findings, by_id)
    return narrative


def _has_rows(evidence: Sequence[Evidence]) -> bool:
    return any(e.ok and e.rows for e in evidence)


def _add_caveats(parsed: dict[str, Any], narrative: Narrative) -> None:
    """The model's caveats, whitespace folded, into ``narrative``."""
    said = (" ".join(str(c).split()) for c in _list(parsed.get("caveats")))
    narrative.caveats.extend(c for c in said if c)


def _nothing_returned(parsed: dict[str, Any], narrative: Narrative) -> Narrative:
    for item in _list(parsed.get("findings")):
        if isinstance(item, dict) and str(item.get("text", "")).strip():
            text = " ".join(str(item["text"]).split())
            narrative.dropped.append(
                DroppedFinding(
                    text=text, evidence=_strs(item.get("evidence")), reason=NO_ROWS_REASON
                )
            )
    narrative.by = "none"
    narrative.short_answer = NO_ROWS
    _add_caveats(parsed, narrative)
    return narrative


def chart_findings(findings: Sequence[Finding], by_id: dict[str, Evidence]) -> None:
    """Give each finding the chart of the first evidence it cites (``by_id``: evidence by id)."""
    for finding in findings:
        shown = by_id.get(finding.evidence[0]) if finding.evidence else None
        if shown is not None:
            finding.chart = chart_spec(shown.columns, shown.rows, title=shown.question)


def fact_findings(facts: Sequence[ToolFacts]) -> list[Finding]:
    """The findings made of the computed facts alone (each fact's summary, citing its
    evidence), what a narrative falls back to when no finding of the model's stands."""
    return [
        Finding(
            text=f.summary(),
            evidence=[f.evidence],
            numbers=[v for _, v, _ in numbers_in_text(f.summary())],
        )
        for f in facts[:MAX_FINDINGS]
    ]


def _reply_json(text: str, narrative: Narrative) -> Any:
    """The reply's JSON; a reply cut off by the token budget gives what it completed (and a
    caveat says so); :class:`LLMOutputError` when nothing of it parses."""
    try:
        parsed = parse_cut_json(text)
    except ValueError as exc:
        raise LLMOutputError(f"model output is not JSON: {exc}", text) from None
    if isinstance(parsed, dict) and text.strip() and not _whole_json(text):
        narrative.caveats.append(
            "the model's narrative was cut off by its token budget; what it completed is kept"
        )
    return parsed


def _whole_json(text: str) -> bool:
    """Whether ``text`` starts with a complete JSON value (text after it is not a cut)."""
    body = text.strip().removeprefix("```json").removeprefix("```").strip()
    try:
        json.JSONDecoder().raw_decode(body)
    except json.JSONDecodeError:
        return False
    return True


def _row_numbers(item: Evidence) -> list[float]:
    return known_numbers(cell for row in item.rows for cell in row)


def _held(ids: Sequence[str], by_id: dict[str, Evidence]) -> list[float]:
    """The numbers the evidence ``ids`` hold: their rows' and their sub-questions' ("the
    last 3 months")."""
    return [n for i in ids for n in _row_numbers(by_id[i]) + known_numbers([by_id[i].question])]


def _supporting(
    text: str, by_id: dict[str, Evidence], base: list[float], facts: Sequence[ToolFacts]
) -> list[str]:
    """The evidence ids that hold ``text``'s numbers when the ids it cited do not (empty:
    some number is in no evidence, or ``text`` states none)."""
    stated = numbers_in_text(text)
    if not stated or unsupported_number(text, _held(list(by_id), by_id) + base) is not None:
        return []
    holding = [
        i
        for i in by_id
        if any(unsupported_number(written, _held([i], by_id)) is None for written, _, _ in stated)
    ]
    if holding:
        return holding
    # no query's rows hold them: the computed facts whose numbers do, cited by the query
    # they were computed on (numbers only the question holds support no citation)
    computed = [
        f.evidence
        for f in facts
        if f.evidence in by_id
        and any(
            unsupported_number(written, known_numbers(f.numbers())) is None
            for written, _, _ in stated
        )
    ]
    return list(dict.fromkeys(computed))


def _shown(item: Evidence) -> dict[str, Any]:
    rows = [" | ".join(_cell(c) for c in row) for row in item.rows[:PROMPT_ROWS]]
    more = max(0, len(item.rows) - PROMPT_ROWS)
    note = ""
    if item.error is None and not item.rows:
        note = "no rows"
    elif item.rows and all(c is None for row in item.rows for c in row):
        note = "no value (every cell is NULL): say the data has no answer, do not guess one"
        rows, more = [], 0
    return {
        "id": item.id,
        "question": item.question,
        "purpose": item.purpose,
        "header": " | ".join(item.columns),
        "rows": rows,
        "more": more,
        "error": item.error,
        "note": note,
        "notes": item.notes,
    }


def _cell(value: Any) -> str:
    text = str(value)
    return text if len(text) <= PROMPT_CELL_CHARS else text[: PROMPT_CELL_CHARS - 3] + "..."


def _plain(facts: ToolFacts) -> dict[str, Any]:
    data = facts.facts()
    data.pop("evidence", None)
    return {"facts": json.dumps(data, default=str)[:1500]}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value] if value not in (None, "") else []


def _strs(value: Any) -> list[str]:
    return [str(v) for v in _list(value)]
