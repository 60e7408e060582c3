"""Facts about a question that code can settle before the model reads it.

- ``dates_text``: the relative dates at the query time ("last month is '202505'"), from the
  knowledge base's reporting calendar (``agents.calendar``);
- ``resolved_text``: the question's own time windows resolved to periods
  (``agents.time_phrases``) and the currency of the answer (``agents.currency_phrases``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from agents.calendar import CalendarError, ReportingCalendar
from agents.currency_phrases import describe_currency
from agents.time_phrases import describe_windows, find_time_windows
from indices.evidence import Evidence
from ukf.triggers import query_time_of

log = logging.getLogger(__name__)


def calendar_of(evidence: Evidence) -> ReportingCalendar | None:
    """The reporting calendar from the calendar facts of the evidence, if any."""
    items = [*evidence.items, *evidence.dropped]
    facts = [
        i.entry.content_resources["calendar"]
        for i in items
        if isinstance(i.entry.content_resources.get("calendar"), dict)
    ]
    if not facts:
        return None
    try:
        return ReportingCalendar.from_facts(facts)
    except (CalendarError, TypeError) as exc:
        log.warning("calendar facts of %s unusable: %s", evidence.question, exc)
        return None


def dates_text(calendar: ReportingCalendar | None, context: Mapping[str, Any]) -> str:
    """The relative dates at the query time, when the knowledge base has calendar facts."""
    when = query_time_of(context)
    if when is None or calendar is None:
        return ""
    return calendar.describe(when)


def time_spans(
    question: str, calendar: ReportingCalendar | None, context: Mapping[str, Any]
) -> list[tuple[int, int]]:
    """Where the question's resolved time phrases are (their words need no other link:
    "FY2024" is a period, not the value 'FY2024' of every fiscal_year column)."""
    when = query_time_of(context)
    if when is None or calendar is None:
        return []
    return [w.span for w in find_time_windows(question, calendar, when)]


def resolved_text(
    question: str,
    calendar: ReportingCalendar | None,
    context: Mapping[str, Any],
    columns: Iterable[str] = (),
) -> str:
    """The question's time windows and currency, resolved (empty when nothing applies);
    ``columns`` are those of the tables the prompt shows."""
    parts: list[str] = []
    when = query_time_of(context)
    if when is not None and calendar is not None:
        windows = find_time_windows(question, calendar, when)
        parts.append(
            describe_windows(
                windows,
                calendar,
                when,
                question=question,
                to_date_columns=calendar.to_date_columns,
            )
        )
    parts.append(describe_currency(question, context.get("user_profile"), columns))
    return " ".join(p for p in parts if p)
