"""Facts about a question that code can settle before the model reads it.

- ``dates_text``: the relative dates at the query time ("last month is '202505'"), from the
  knowledge base's reporting calendar (``agents.rag.calendar``);
- ``resolved_text``: the question's own time windows resolved to periods
  (``agents.rag.time_phrases``) and the currency of the answer (``agents.rag.currency_phrases``);
- ``period_pin``: the one period a query on the calendar's period column must read for the
  question, when its time words settle it (``agents.sql.period_pin`` holds queries to it).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from agents.rag.calendar import CalendarError, ReportingCalendar
from agents.rag.currency_phrases import describe_currency
from agents.rag.time_phrases import (
    TimeWindow,
    asks_per_month,
    describe_windows,
    find_time_windows,
)
from indices.evidence import Evidence
from ukf import BaseUKF, QueryContext

log = logging.getLogger(__name__)


def calendar_of(evidence: Evidence) -> ReportingCalendar | None:
    """The reporting calendar from the calendar facts of the evidence, if any."""
    items = [*evidence.items, *evidence.dropped]
    return calendar_among((i.entry for i in items), evidence.question)


def calendar_among(entries: Iterable[BaseUKF], source: str = "") -> ReportingCalendar | None:
    """The reporting calendar the ``calendar`` facts of ``entries`` state, merged; None
    without any, or when they cannot be used (logged, naming ``source``)."""
    facts = [
        e.content_resources["calendar"]
        for e in entries
        if isinstance(e.content_resources.get("calendar"), dict)
    ]
    if not facts:
        return None
    try:
        return ReportingCalendar.from_facts(facts)
    except (CalendarError, TypeError) as exc:
        log.warning("calendar facts of %s unusable: %s", source or "the rules", exc)
        return None


def dates_text(calendar: ReportingCalendar | None, context: QueryContext) -> str:
    """The relative dates at the query time, when the knowledge base has calendar facts."""
    when = context.aware_query_time
    if when is None or calendar is None:
        return ""
    return calendar.describe(when)


def time_windows(
    question: str, calendar: ReportingCalendar | None, context: QueryContext
) -> list[TimeWindow]:
    """The question's time phrases resolved at the query time (none without a calendar)."""
    when = context.aware_query_time
    if when is None or calendar is None:
        return []
    return find_time_windows(question, calendar, when)


def resolved_text(
    question: str,
    calendar: ReportingCalendar | None,
    context: QueryContext,
    windows: list[TimeWindow],
    columns: Iterable[str] = (),
) -> str:
    """The question's time ``windows`` (from :func:`time_windows`) and currency, resolved
    (empty when nothing applies); ``columns`` are those of the tables the prompt shows."""
    parts: list[str] = []
    when = context.aware_query_time
    if when is not None and calendar is not None:
        parts.append(
            describe_windows(
                windows,
                calendar,
                when,
                question=question,
                to_date_columns=calendar.to_date_columns,
            )
        )
    parts.append(describe_currency(question, context.user_profile, columns))
    return " ".join(p for p in parts if p)


@dataclass(frozen=True)
class PeriodPin:
    """The period a query filtering ``column`` on one period must read: the to-date figure of
    the question's one time window ``phrase`` is at ``period``."""

    column: str
    period: str
    phrase: str


def period_pin(
    question: str,
    calendar: ReportingCalendar | None,
    windows: list[TimeWindow],
) -> PeriodPin | None:
    """The question's pinned period: only when the calendar names its period column, the
    question names exactly one time window (``windows``, from :func:`time_windows`: a
    comparison base such as "vs last year" is none) and does not ask month by month. Two
    windows, or none, leave the query's periods to the model."""
    if calendar is None or not calendar.period_column or len(windows) != 1:
        return None
    if asks_per_month(question):
        return None
    window = windows[0]
    return PeriodPin(calendar.period_column, window.last, window.phrase)


def pin_among(entries: Iterable[BaseUKF], question: str, context: QueryContext) -> PeriodPin | None:
    """:func:`period_pin` for ``question`` asked in ``context``, with the calendar the
    ``entries`` state (rules outside a retrieval: a replay, a pack's check)."""
    calendar = calendar_among(entries, question)
    return period_pin(question, calendar, time_windows(question, calendar, context))
