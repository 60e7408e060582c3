"""The reporting calendar a document states, read without the model.

"Nova revenue this month?" asked on 5 March means February when the figures of a month are
published on the 10th; "last quarter" in October is fiscal Q1 when the fiscal year starts in
April. The RAG agent works such phrases out from the knowledge base's *calendar facts*
(:mod:`agents.rag.calendar`: rules whose ``content_resources["calendar"]`` holds them), and
without them a small model guesses the period: on AutoFin, the knowledge the extraction gave
without calendar facts answered 0.150 EX against the hand-written pack's 0.467, most of the
difference wrong periods and wrong to-date columns. A calendar page states the facts in a
handful of fixed phrasings, which this pass reads section by section:

- the fiscal year's first month: "the fiscal year runs from April to March", "the fiscal
  year starts in April", "FY2025 = April 2024 to March 2025";
- how it is named: "named after the year it ends in" (or "starts in"), or the example's
  label against its years (FY2025 ending in 2025: by its end);
- the publication day: "refreshed on the 10th", "published on the 10th of the month";
- the to-date columns (``{"month": "ptd_", "quarter": "qtd_", "year": "ytd_"}``): the
  schema's columns that start with the to-date abbreviations (``ptd_``/``mtd_``, ``qtd_``,
  ``ytd_``), when the section mentions one of them;
- how periods are written (``YYYYMM`` or ``YYYY-MM``): the profiled values of a period
  column (``period``, ``fiscal_period``, ``year_month``...); when every such column has the
  same name, it is the ``period_column`` (a query on one other period than the question's
  gets the question's: :mod:`agents.sql.period_pin`).

A section stating the fiscal year's start or the publication day gives one temporal rule,
``Reporting calendar: <its heading>``, whose content is the sentences that state the facts
and whose ``calendar`` holds them all (the schema's facts included); facts that contradict
each other within a section (two different first months) give none. The entries have the
shape and provenance of the model's entries and go through the same merge.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agents.learn.documents.build import Origin
from agents.learn.mine.day_spans import value_span
from agents.learn.mine.schema_view import SchemaView
from agents.rag.calendar import CalendarError, ReportingCalendar
from agents.rag.time_phrases import MONTHS
from kb.documents import Document, Section
from ukf import BaseUKF, RuleUKF

_MONTH = r"(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_FISCAL = r"(?:fiscal|financial|business|reporting)\s+year"
_STARTS = re.compile(
    rf"\b{_FISCAL}\b[^.;]{{0,40}}?\b(?:runs|starts|begins|commences|is)\s+"
    rf"(?:from\s+|in\s+|on\s+)?(?:(?:the\s+)?1(?:st)?\s+(?:of\s+)?)?{_MONTH}\b",
    re.IGNORECASE,
)
_EXAMPLE = re.compile(
    rf"\bFY\s?'?(\d{{2}}|\d{{4}})\s*(?:=|:|is|runs from|covers|means)\s*"
    rf"(?:from\s+)?{_MONTH}\s+(\d{{4}})\s*(?:-|–|—|to|through|until)\s*{_MONTH}\s+(\d{{4}})",
    re.IGNORECASE,
)
_NAMED = re.compile(
    r"\bnamed\s+(?:after|for|by)\s+the\s+(?:calendar\s+)?year\s+(?:in\s+which\s+)?it\s+"
    r"(ends|finishes|closes|starts|begins|opens)\b",
    re.IGNORECASE,
)
_PUBLISHED = re.compile(
    r"\b(?:refresh(?:ed)?|publish(?:ed)?|released?|loaded|closed|available|updated)\s+"
    r"(?:on|by|from)\s+the\s+(\d{1,2})(?:st|nd|rd|th)\b",
    re.IGNORECASE,
)
_TO_DATE = {"month": ("ptd_", "mtd_"), "quarter": ("qtd_",), "year": ("ytd_",)}
_MENTIONED = re.compile(r"\b(ptd|mtd|qtd|ytd)(?:_\w*)?\b", re.IGNORECASE)
_PERIOD_COLUMN = re.compile(r"^(?:\w+_)?(?:period|year_?month|yyyymm|month_key)$", re.I)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z'\"(])")


@dataclass(frozen=True)
class CalendarFacts:
    """What one section states: the facts and the sentences stating them."""

    facts: dict[str, Any]
    sentences: list[str]


def section_calendar(text: str, view: SchemaView) -> CalendarFacts | None:
    """The calendar facts ``text`` states (None: no fiscal start or publication day, or
    facts that contradict each other or the calendar's own checks)."""
    stated: dict[str, Any] = {}
    sentences: list[str] = []
    starts = {MONTHS[m.group(1).casefold()] for m in _STARTS.finditer(text)}
    named: set[str] = set()
    for example in _EXAMPLE.finditer(text):
        label, first, first_year, _last, last_year = example.groups()
        starts.add(MONTHS[first.casefold()])
        year = int(label) if len(label) == 4 else 2000 + int(label)
        if year == int(last_year) != int(first_year):
            named.add("end")
        elif year == int(first_year) != int(last_year):
            named.add("start")
    for match in _NAMED.finditer(text):
        named.add("end" if match.group(1).casefold() in ("ends", "finishes", "closes") else "start")
    days = {int(m.group(1)) for m in _PUBLISHED.finditer(text)}
    if len(starts) > 1 or len(named) > 1 or len(days) > 1:
        return None  # contradicting statements: nothing is taken
    if starts:
        stated["fiscal_year_start_month"] = starts.pop()
    if named:
        stated["fiscal_year_named_by"] = named.pop()
    if days:
        stated["publish_day"] = days.pop()
    if "fiscal_year_start_month" not in stated and "publish_day" not in stated:
        return None
    patterns = (_STARTS, _EXAMPLE, _NAMED, _PUBLISHED, _MENTIONED)
    lines = [line.strip() for line in text.splitlines() if not line.lstrip().startswith("#")]
    for line in lines:
        for sentence in _SENTENCE.split(line.lstrip("-*+ ").strip()):
            if any(p.search(sentence) for p in patterns) and sentence not in sentences:
                sentences.append(sentence)
    facts = {**stated, **schema_calendar(view, mentioned=bool(_MENTIONED.search(text)))}
    try:
        ReportingCalendar.from_facts([facts])
    except CalendarError:
        return None
    return CalendarFacts(facts, sentences)


def schema_calendar(view: SchemaView, *, mentioned: bool) -> dict[str, Any]:
    """The calendar facts the profiled schema shows: the to-date column prefixes (only when
    the text ``mentioned`` a to-date figure), the period format and the period column (when
    every period column has the same name)."""
    facts: dict[str, Any] = {}
    names = [column.casefold() for _table, column in view.columns]
    if mentioned:
        to_date = {
            grain: prefix
            for grain, prefixes in _TO_DATE.items()
            for prefix in prefixes
            if any(name.startswith(prefix) for name in names)
        }
        if to_date:
            facts["to_date_columns"] = to_date
    found = period_columns(view)
    if found:
        facts["period_format"] = next(iter(found.values()))
        if len(found) == 1:
            facts["period_column"] = next(iter(found))
    return facts


def period_columns(view: SchemaView) -> dict[str, str]:
    """The names of the period columns (``period``, ``fiscal_period``...) whose profiled
    values are written ``YYYYMM`` or ``YYYY-MM``, each with that format, in schema order."""
    found: dict[str, str] = {}
    for (_table, column), entry in view.columns.items():
        if not _PERIOD_COLUMN.match(column) or column.casefold() in map(str.casefold, found):
            continue
        shape = _period_shape(view, entry)
        if shape:
            found[column] = shape
    return found


def _period_shape(view: SchemaView, entry: Any) -> str | None:
    temporal = (entry.content_resources.get("statistics") or {}).get("temporal") or {}
    shape = {"%Y%m": "YYYYMM", "%Y-%m": "YYYY-MM"}.get(str(temporal.get("format")))
    if shape:  # profiled as dates written in that format
        return shape
    bounds = view.value_range(entry)
    spans = [value_span(str(b)) for b in bounds or ()]
    shapes = {found[0] for found in spans if found is not None}
    if len(spans) == 2 and None not in spans and len(shapes) == 1:
        shape = shapes.pop()
        if shape in ("YYYYMM", "YYYY-MM"):
            return shape
    return None


def calendar_pass(
    document: Document, view: SchemaView, origin_for: Callable[[str], Origin]
) -> list[BaseUKF]:
    """The temporal rules holding the calendar facts ``document``'s sections state;
    ``origin_for(locator)`` gives each section's :class:`Origin`."""
    entries: list[BaseUKF] = []
    for section in document.sections:
        found = section_calendar(section.text, view)
        if found is not None:
            entries.append(_rule(section, found, origin_for(section.locator)))
    return entries


def _rule(section: Section, found: CalendarFacts, origin: Origin) -> BaseUKF:
    heading = section.heading[-1] if section.heading else "document"
    content = " ".join(found.sentences) or section.text[:600]
    return RuleUKF.create(
        f"Reporting calendar: {heading}",
        content,
        kind="temporal",
        database=origin.database,
        content_resources={"calendar": found.facts},
        **origin.fields("calendar"),
    )
