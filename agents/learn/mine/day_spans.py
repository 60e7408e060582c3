"""Spans of days, and the period literals of SQL read as spans: a year (``2024``, ``'2024'``), a
month (``'2024-06'``, ``'202406'``) or a day (``'2024-06-15'``); :func:`range_check` compares a
span with a column's profiled range. Used by :mod:`agents.learn.mine.periods` and
:mod:`agents.learn.mine.extract`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

YEARS = r"((?:19|20)\d{2})"
MONTH_TEXT = re.compile(r"^((?:19|20)\d{2})-?(0[1-9]|1[0-2])$")
DAY_TEXT = re.compile(r"^((?:19|20)\d{2})-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])(?:[ T].*)?$")


@dataclass(frozen=True)
class Span:
    """Days ``first``..``last`` (inclusive); ``None`` is an open end."""

    first: date | None
    last: date | None

    def intersect(self, other: Span) -> Span:
        firsts = [d for d in (self.first, other.first) if d is not None]
        lasts = [d for d in (self.last, other.last) if d is not None]
        return Span(max(firsts) if firsts else None, min(lasts) if lasts else None)


def value_span(value: str | float | int) -> tuple[str, Span] | None:
    """How a literal is written as a period, and its days; None when it is no period."""
    if isinstance(value, float):
        return None
    if isinstance(value, int):
        if 1900 <= value <= 2100:
            return "YYYY", year_span(value)
        text = str(value)
        found = MONTH_TEXT.match(text) if len(text) == 6 else None
        return ("YYYYMM", month_span(int(found[1]), int(found[2]))) if found else None
    text = value.strip()
    if re.fullmatch(YEARS, text):
        return "YYYY", year_span(int(text))
    if month := MONTH_TEXT.match(text):
        shape = "YYYY-MM" if "-" in text else "YYYYMM"
        return shape, month_span(int(month[1]), int(month[2]))
    if day := DAY_TEXT.match(text):
        try:
            when = date(int(day[1]), int(day[2]), int(day[3]))
        except ValueError:
            return None
        return "YYYY-MM-DD", Span(when, when)
    return None


def year_span(year: int) -> Span:
    return Span(date(year, 1, 1), date(year, 12, 31))


def month_span(year: int, month: int) -> Span:
    following = date(year + month // 12, month % 12 + 1, 1)
    return Span(date(year, month, 1), following - timedelta(days=1))


def period_month_span(period: str) -> Span | None:
    found = MONTH_TEXT.match(period)
    return month_span(int(found[1]), int(found[2])) if found else None


def range_check(bounds: tuple[object, object] | None, span: Span) -> str:
    """``found`` when ``span`` meets the column's profiled range (``bounds``: its smallest
    and largest values), ``missing`` when it lies outside, ``unchecked`` without bounds."""
    if bounds is None:
        return "unchecked"
    low, high = (_as_span(b) for b in bounds)
    if low is None or high is None or low.first is None or high.last is None:
        return "unchecked"
    after = span.last is not None and span.last < low.first
    before = span.first is not None and span.first > high.last
    return "missing" if after or before else "found"


def _as_span(value: object) -> Span | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    read = value_span(value)
    return read[1] if read else None
