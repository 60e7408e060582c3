"""Period predicates: the question's time phrase paired with the SQL's date filter.

Two sides are read and compared as spans of days (an open end is ``None``):

- **the SQL**: the predicates on one column whose literals look like periods: a year (``2024``,
  ``'2024'``), a month (``'2024-06'``, ``'202406'``) or a day (``'2024-06-15'``), combined
  over ``=``, ``IN``, ``BETWEEN`` and the bounds ``>=``, ``>``, ``<``, ``<=`` of that column
  (:func:`column_periods`);
- **the question**: its time phrases (:func:`period_phrases`): the relative and named windows
  ``agents.rag.time_phrases`` finds ("last month", "this year", "June 2024", "Q2 FY2024"),
  resolved at the experience's query time with the store's reporting calendar (a plain
  calendar year without one), and years: "in 2024", "since 2020", "after 2015", "before
  2010", "between 2019 and 2021".

A phrase and a column's span pair when they cover the same days, or when a quarter or year
phrase is answered by its last month (the to-date figure, as wide finance tables hold it).
A *relative* phrase is mined relative to the query time, never as the literal dates: its
:class:`PeriodMatch` says which window the phrase is (``last_month``...) and how the SQL
uses it; :mod:`agents.learn.mine.entries` writes it so (``period`` resources, and the
``calendar`` fact the RAG resolves the phrase with at the next question's query time).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta

from agents.learn.mine import entries
from agents.learn.mine.day_spans import (
    YEARS,
    Span,
    period_month_span,
    value_span,
    year_span,
)
from agents.learn.mine.sql_facts import PredicateFact
from agents.rag.calendar import CalendarError, ReportingCalendar
from agents.rag.time_phrases import PATTERNS, find_time_windows
from ukf import BaseUKF, PredicateUKF

RELATIVE_KINDS = frozenset(
    {"this_month", "last_month", "this_quarter", "last_quarter", "this_year", "last_year"}
)
# what each relative window is, in words (the anchor: the question's month, or the newest
# published month when the calendar has a publication day)
RELATIVE_TEXT = {
    "this_month": "the {anchor}",
    "last_month": "the month before the {anchor}",
    "this_quarter": "the {fiscal}quarter holding the {anchor}",
    "last_quarter": "the {fiscal}quarter before the one holding the {anchor}",
    "this_year": "the {fiscal}year holding the {anchor}",
    "last_year": "the {fiscal}year before the one holding the {anchor}",
}
_USE_TEXT = {
    "window": "the whole window",
    "so_far": "its months so far",
    "to_date": "its to-date figure",
}
_OPS = frozenset({"=", "IN", "BETWEEN", ">", ">=", "<", "<="})


@dataclass(frozen=True)
class ColumnPeriod:
    """The span one column is filtered to, how its values are written (``shape``) and the
    predicates that say so."""

    table: str | None
    column: str
    shape: str  # "YYYY" | "YYYYMM" | "YYYY-MM" | "YYYY-MM-DD"
    span: Span
    predicates: tuple[PredicateFact, ...]


@dataclass(frozen=True)
class PeriodPhrase:
    """A time phrase of the question, its span of days at the query time and its kind
    (``last_month``..., ``year``, ``since_year``, ``month_name``...)."""

    text: str
    start: int
    end: int
    kind: str
    span: Span
    grain: str  # "day" | "month" | "quarter" | "year"
    last_month: Span | None = None  # a quarter or year: its last month (the to-date figure)

    @property
    def relative(self) -> bool:
        return self.kind in RELATIVE_KINDS


@dataclass(frozen=True)
class PeriodMatch:
    """A phrase paired with a column's period; ``use``: ``window`` (the same days),
    ``so_far`` (a quarter or year up to the query's month) or ``to_date`` (a quarter or year
    read at its last month)."""

    phrase: PeriodPhrase
    period: ColumnPeriod
    use: str
    anchor: str = "query month"
    fiscal: bool = False
    extra: dict[str, object] = field(default_factory=dict)


# ------------------------------------------------------------------ SQL side
def column_periods(predicates: Iterable[PredicateFact]) -> list[ColumnPeriod]:
    """Per column, the span its period predicates filter it to (one shape per column)."""
    by_column: dict[tuple[str | None, str], list[tuple[PredicateFact, str, Span]]] = {}
    for pred in predicates:
        if pred.op not in _OPS:
            continue
        spans = [value_span(v) for v in pred.values]
        if not spans or any(s is None for s in spans):
            continue
        read = [s for s in spans if s is not None]
        shapes = {shape for shape, _ in read}
        if len(shapes) != 1:
            continue
        span = _predicate_span(pred.op, [s for _, s in read])
        if span is not None:
            by_column.setdefault((pred.table, pred.column), []).append((pred, shapes.pop(), span))
    found: list[ColumnPeriod] = []
    for (table, column), rows in by_column.items():
        if len({shape for _, shape, _ in rows}) != 1:
            continue
        span = Span(None, None)
        for _, _, part in rows:
            span = span.intersect(part)
        found.append(ColumnPeriod(table, column, rows[0][1], span, tuple(p for p, _, _ in rows)))
    return found


def _predicate_span(op: str, spans: list[Span]) -> Span | None:
    if op == "IN":
        return Span(min(s.first for s in spans if s.first), max(s.last for s in spans if s.last))
    if op == "BETWEEN":
        return Span(spans[0].first, spans[1].last)
    only = spans[0]
    assert only.first is not None and only.last is not None
    return {
        "=": only,
        ">=": Span(only.first, None),
        ">": Span(only.last + timedelta(days=1), None),
        "<=": Span(None, only.last),
        "<": Span(None, only.first - timedelta(days=1)),
    }.get(op)


# ------------------------------------------------------------------ question side
_YEAR_PATTERNS = [
    (re.compile(rf"\bbetween\s+{YEARS}\s+and\s+{YEARS}\b", re.I), "between_years"),
    (re.compile(rf"\bfrom\s+{YEARS}\s+(?:to|until|through)\s+{YEARS}\b", re.I), "between_years"),
    (re.compile(rf"\b(?:since|from)\s+{YEARS}\b", re.I), "since_year"),
    (re.compile(rf"\bafter\s+{YEARS}\b", re.I), "after_year"),
    (re.compile(rf"\bbefore\s+{YEARS}\b", re.I), "before_year"),
    (re.compile(rf"\b{YEARS}\b"), "year"),
]


def period_phrases(
    question: str, when: datetime | None, calendar: ReportingCalendar | None = None
) -> list[PeriodPhrase]:
    """The time phrases of ``question`` with their days at ``when`` (relative phrases only
    when ``when`` is known)."""
    calendar = calendar or ReportingCalendar(period_format="YYYYMM")
    found: list[PeriodPhrase] = []
    if when is not None:
        for window in find_time_windows(question, _monthly(calendar), when):
            kind = _kind_of(window.phrase)
            first, last = period_month_span(window.first), period_month_span(window.last)
            if kind is None or first is None or last is None:
                continue
            start, end = window.span
            whole = _whole(calendar, kind, window.grain, first)
            tail = Span(last.first, last.last) if window.grain != "month" else None
            found.append(
                PeriodPhrase(
                    question[start:end],
                    start,
                    end,
                    kind,
                    whole or Span(first.first, last.last),
                    window.grain,
                    tail,
                )
            )
    taken = [(p.start, p.end) for p in found]
    for pattern, kind in _YEAR_PATTERNS:
        for match in pattern.finditer(question):
            start, end = match.span()
            if any(start < b and a < end for a, b in taken):
                continue
            taken.append((start, end))
            years = [int(g) for g in match.groups()]
            found.append(
                PeriodPhrase(match.group(0), start, end, kind, _year_phrase(kind, years), "year")
            )
    return sorted(found, key=lambda p: p.start)


def _monthly(calendar: ReportingCalendar) -> ReportingCalendar:
    """The same calendar writing periods as YYYYMM (what this module reads back)."""
    try:
        return ReportingCalendar(
            fiscal_year_start_month=calendar.fiscal_year_start_month,
            fiscal_year_named_by=calendar.fiscal_year_named_by,
            publish_day=calendar.publish_day,
        )
    except CalendarError:
        return ReportingCalendar()


def _kind_of(phrase: str) -> str | None:
    for pattern in PATTERNS:
        if pattern.regex.fullmatch(phrase):
            return pattern.kind
    return None


def _whole(calendar: ReportingCalendar, kind: str, grain: str, first: Span) -> Span | None:
    """A to-date window of this quarter or year, as its whole quarter or year."""
    if kind not in ("this_quarter", "this_year") or first.first is None:
        return None
    months = 3 if grain == "quarter" else 12
    start = first.first
    index = start.year * 12 + start.month - 1 + months
    return Span(start, date(index // 12, index % 12 + 1, 1) - timedelta(days=1))


def _year_phrase(kind: str, years: list[int]) -> Span:
    if kind == "between_years":
        return Span(year_span(years[0]).first, year_span(years[1]).last)
    year = year_span(years[0])
    return {
        "since_year": Span(year.first, None),
        "after_year": Span(year_span(years[0] + 1).first, None),
        "before_year": Span(None, year_span(years[0] - 1).last),
    }.get(kind, year)


# ------------------------------------------------------------------ pairing
def match_periods(
    phrases: list[PeriodPhrase],
    periods: list[ColumnPeriod],
    calendar: ReportingCalendar | None = None,
) -> list[PeriodMatch]:
    """Each phrase paired with the column period covering its days (each used once)."""
    anchor = "newest published month" if calendar and calendar.publish_day else "query month"
    fiscal = calendar is not None and calendar.fiscal_year_start_month != 1
    matches: list[PeriodMatch] = []
    free = list(periods)
    for phrase in phrases:
        for period in free:
            use = _use(phrase, period)
            if use is not None:
                matches.append(PeriodMatch(phrase, period, use, anchor, fiscal))
                free.remove(period)
                break
    return matches


def _use(phrase: PeriodPhrase, period: ColumnPeriod) -> str | None:
    if period.span == phrase.span:
        return "window"
    if phrase.kind in ("this_quarter", "this_year") and _to_date_span(phrase) == period.span:
        return "so_far"  # the window up to the query's month
    if phrase.last_month is not None and period.span == phrase.last_month:
        return "to_date"  # a quarter or year read at its last (to date: newest) month
    return None


def _to_date_span(phrase: PeriodPhrase) -> Span | None:
    if phrase.last_month is None:
        return None
    return Span(phrase.span.first, phrase.last_month.last)


def relative_text(match: PeriodMatch) -> str:
    """What a relative phrase means, in words ("the month before the query month")."""
    template = RELATIVE_TEXT[match.phrase.kind]
    return template.format(anchor=match.anchor, fiscal="fiscal " if match.fiscal else "")


def condition_text(match: PeriodMatch, column: str) -> str:
    """The filter a relative phrase stands for, its days relative to the query time. A
    quarter or a year reads the same whichever way one SQL used it (its months so far, or
    its to-date figure at its last month), so that the phrase's knowledge does not conflict
    with itself across questions."""
    window = relative_text(match)
    shape = match.period.shape
    if match.phrase.grain == "month" and shape in ("YYYYMM", "YYYY-MM"):
        return f"{column} = {window} (written {shape})"
    if match.phrase.grain == "year" and shape == "YYYY":
        return f"{column} = {window} (written {shape})"
    return (
        f"{column} within {window}, up to that month while it runs; a to-date figure is read "
        f"at its last month (written {shape})"
    )


def calendar_facts(calendar: ReportingCalendar | None, shape: str) -> dict[str, object] | None:
    """The ``calendar`` fact a relative period entry carries, so the RAG resolves its phrase
    at the next query time (month-period columns only: the formats the RAG writes)."""
    if shape not in ("YYYYMM", "YYYY-MM"):
        return None
    facts: dict[str, object] = {"period_format": shape}
    if calendar is not None:
        facts["fiscal_year_start_month"] = calendar.fiscal_year_start_month
        facts["fiscal_year_named_by"] = calendar.fiscal_year_named_by
        if calendar.publish_day:
            facts["publish_day"] = calendar.publish_day
    return facts


def period_entry(
    match: PeriodMatch,
    column: BaseUKF,
    prov: entries.Provenance,
    calendar: ReportingCalendar | None,
    when: datetime,
) -> PredicateUKF:
    """The mined entry of a matched phrase: an absolute phrase with the SQL's own filter, a
    relative one with its days relative to the query time (and the literal filter of
    ``when`` in the description). The condition names the column without its table: the
    same phrase filters the same column name in every table holding it."""
    name = column.content_resources["column"]
    literal = " AND ".join(
        replace(p, table=None, column=name).condition() for p in match.period.predicates
    )
    said = match.phrase
    facts: dict[str, object] = {
        "phrase": said.kind,
        "relative": said.relative,
        "grain": said.grain,
        "column": name,
        "shape": match.period.shape,
    }
    if not said.relative:
        return entries.period(said.text, literal, column, {"period": facts}, prov)
    facts["anchor"] = match.anchor
    resources: dict[str, object] = {"period": facts}
    calendar_fact = calendar_facts(calendar, match.period.shape)
    if calendar_fact is not None:
        resources["calendar"] = calendar_fact
    return entries.period(
        said.text,
        condition_text(match, name),
        column,
        resources,
        prov,
        description=(
            f"Relative to the query time (asked at {when:%Y-%m-%d}: {literal}; read as "
            f"{_USE_TEXT[match.use]})."
        ),
    )
