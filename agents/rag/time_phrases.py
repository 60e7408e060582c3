"""The time windows a question names, resolved to reporting periods.

The calendar paragraph (``ReportingCalendar.describe``) says what "last quarter" means at the
query time; a small model still has to find the words in the question, pick the right
sentence and work out that "Q2 FY2025" ends in September 2024. This module does that step:
it finds the English time phrases business users write ("last month", "Q3 FY2024", "so far
this year", "December 2022", "period 202404", "the previous fiscal quarter") and states, for
each, the months it covers and the period whose to-date figure answers it.

Relative comparison bases are not windows: in "vs last year", "same month last year" and
"last year's figure" the words name the base of a comparison (a prior-year column), not the
window asked about. Named dates ("compared with March 2024") are always resolved.

When the calendar facts name the columns of to-date figures (``to_date_columns``: e.g.
``{"month": "ptd_", "quarter": "qtd_", "year": "ytd_"}``), the resolved text says which to use.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime

from agents.rag.calendar import ReportingCalendar, shift_month

MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_FISCAL = r"(?:fiscal\s+(?:year\s+)?)?"
# a comparison base, not a window: "vs last year", "same month last year", "last year's"
_COMPARISON_BEFORE = re.compile(
    r"(?:\b(?:vs\.?|versus|than|compared\s+(?:to|with)|over)|\bsame\s+(?:\w+\s+){0,2})\s*$",
    re.I,
)
_COMPARISON_AFTER = re.compile(r"^(?:'s|’s)", re.I)
# a question asking for a series of months within its window
_PER_MONTH = re.compile(
    r"\b(?:monthly|month[\s-]+by[\s-]+month|each\s+month|per\s+month|by\s+month|"
    r"every\s+month|month[\s-]+on[\s-]+month\s+trend)\b",
    re.I,
)
# a question with none of these words names no time window at all
_TIME_WORDS = re.compile(
    rf"\b(?:{_MONTH}|\d{{4}}|year|years|quarter|quarters|month|months|monthly|quarterly|"
    r"annual|week|weeks|day|days|today|yesterday|since|ago|ytd|qtd|mtd|fy\d*|q[1-4]|period|"
    r"periods|date|dates|h[12])\b",
    re.I,
)


@dataclass(frozen=True)
class TimeWindow:
    """A window the question names: months ``first``..``last``; its figure is the to-date
    amount of ``grain`` at period ``last`` (the whole window when it has ended)."""

    phrase: str
    grain: str  # "month" | "quarter" | "year"
    label: str
    first: str
    last: str
    to_date: bool = False
    span: tuple[int, int] = (0, 0)  # where the phrase is in the question


@dataclass(frozen=True)
class _Pattern:
    regex: re.Pattern[str]
    kind: str


def _p(pattern: str, kind: str) -> _Pattern:
    return _Pattern(re.compile(pattern, re.I), kind)


# longest and most specific first: spans already claimed are not matched again
PATTERNS = [
    _p(r"\bq([1-4])\s+(?:of\s+)?fy\s?'?(\d{2}|\d{4})\b", "fiscal_quarter"),
    _p(r"\bfy\s?'?(\d{2}|\d{4})\s+q([1-4])\b", "fiscal_quarter_rev"),
    _p(rf"\b{_FISCAL}fy\s?'?(\d{{2}}|\d{{4}})\b", "fiscal_year"),
    _p(r"\bfiscal\s+(?:year\s+)?(\d{4})\b", "fiscal_year"),
    _p(rf"\b({_MONTH})\.?\s+(?:of\s+)?(\d{{4}})\b", "month_name"),
    _p(r"\b(?:period\s+)?((?:19|20)\d{2})-?(0[1-9]|1[0-2])\b", "period"),
    _p(
        r"\b(?:so\s+far\s+this\s+(?:fiscal\s+)?year|(?:fiscal\s+)?year[\s-]+to[\s-]+date|"
        r"ytd|this\s+(?:fiscal\s+)?year|(?:the\s+)?current\s+(?:fiscal\s+)?year)\b",
        "this_year",
    ),
    _p(
        r"\b(?:last|previous|prior)\s+(?:fiscal\s+|financial\s+)?year\b",
        "last_year",
    ),
    _p(
        r"\b(?:so\s+far\s+this\s+(?:fiscal\s+)?quarter|(?:fiscal\s+)?quarter[\s-]+to[\s-]+date|"
        r"qtd|this\s+(?:fiscal\s+)?quarter|(?:the\s+)?current\s+(?:fiscal\s+)?quarter)\b",
        "this_quarter",
    ),
    _p(r"\b(?:last|previous|prior)\s+(?:fiscal\s+)?quarter\b", "last_quarter"),
    _p(
        r"\b(?:this\s+month|(?:the\s+)?current\s+month|month[\s-]+to[\s-]+date|mtd)\b",
        "this_month",
    ),
    _p(r"\b(?:last|previous|prior)\s+month\b", "last_month"),
]


def find_time_windows(
    question: str, calendar: ReportingCalendar, when: datetime
) -> list[TimeWindow]:
    """The windows ``question`` names, in question order, resolved at ``when``."""
    claimed: list[tuple[int, int]] = []
    found: list[tuple[int, TimeWindow]] = []
    for pattern in PATTERNS:
        for match in pattern.regex.finditer(question):
            start, end = match.span()
            if any(start < b and a < end for a, b in claimed):
                continue
            claimed.append((start, end))
            if pattern.kind.startswith("last_") and _is_comparison(question, start, end):
                continue
            window = _resolve(pattern.kind, match, calendar, when)
            if window is not None:
                found.append((start, replace(window, span=(start, end))))
    return [w for _, w in sorted(found, key=lambda pair: pair[0])]


def names_no_time(question: str) -> bool:
    """True when the question has no word about time at all (its period is the default)."""
    return _TIME_WORDS.search(question) is None


def asks_per_month(question: str) -> bool:
    """True when the question asks for a series of months ("month by month", "monthly")."""
    return _PER_MONTH.search(question) is not None


def describe_windows(
    windows: list[TimeWindow],
    calendar: ReportingCalendar,
    when: datetime,
    *,
    question: str = "",
    to_date_columns: Mapping[str, str] | None = None,
) -> str:
    """One sentence per window (or the default period when the question names no time)."""
    columns = dict(to_date_columns or {})
    monthly = bool(question) and asks_per_month(question)
    lines = [_sentence(w, columns, monthly=monthly) for w in windows]
    if not windows and question and names_no_time(question):
        newest = calendar.period(*calendar.newest_month(when))
        column = columns.get("month")
        use = f" with the {column} columns" if column else ""
        lines.append(f"The question names no period: use period '{newest}' (the newest){use}.")
    return " ".join(lines)


def _sentence(window: TimeWindow, columns: Mapping[str, str], *, monthly: bool = False) -> str:
    column = columns.get(window.grain)
    if window.grain == "month":
        use = f": use the {column} columns (that month alone)" if column else ""
        return f"\"{window.phrase}\" is period '{window.last}'{use}."
    span = (
        f"month '{window.last}'"
        if window.first == window.last
        else f"months '{window.first}' to '{window.last}'"
    )
    what = "quarter" if window.grain == "quarter" else "year"
    if monthly:
        month_column = columns.get("month")
        use = f"the {month_column} columns of " if month_column else ""
        return (
            f'"{window.phrase}" is {window.label}, {span}: month by month, use {use}each '
            f"period from '{window.first}' to '{window.last}'."
        )
    if column:
        total = f"for its total use the {column} columns at period = '{window.last}'"
    else:
        total = f"its total is the {what}-to-date figure at period '{window.last}'"
    return f'"{window.phrase}" is {window.label}, {span}: {total}.'


def _is_comparison(question: str, start: int, end: int) -> bool:
    before, after = question[max(0, start - 40) : start], question[end:]
    return bool(_COMPARISON_BEFORE.search(before) or _COMPARISON_AFTER.match(after))


def _resolve(
    kind: str, match: re.Match[str], calendar: ReportingCalendar, when: datetime
) -> TimeWindow | None:
    phrase = " ".join(match.group(0).split())
    newest = calendar.newest_month(when)
    fy_now = calendar.fiscal_year(*newest)
    if kind == "month_name":
        month = MONTHS[match.group(1).lower()]
        return _month(phrase, calendar, int(match.group(2)), month)
    if kind == "period":
        return _month(phrase, calendar, int(match.group(1)), int(match.group(2)))
    if kind == "this_month":
        return _month(phrase, calendar, *newest)
    if kind == "last_month":
        return _month(phrase, calendar, *shift_month(*newest, -1))
    if kind == "fiscal_year":
        return _year(phrase, calendar, _year_number(match.group(1)), newest)
    if kind == "this_year":
        return _year(phrase, calendar, fy_now, newest)
    if kind == "last_year":
        return _year(phrase, calendar, fy_now - 1, newest)
    if kind in ("fiscal_quarter", "fiscal_quarter_rev"):
        groups = match.groups() if kind == "fiscal_quarter" else match.groups()[::-1]
        year = _year_number(groups[1])
        first = shift_month(*calendar.fiscal_year_start(year), 3 * (int(groups[0]) - 1))
        return _quarter(phrase, calendar, first, newest)
    if kind == "this_quarter":
        return _quarter(phrase, calendar, calendar.quarter(*newest)[1], newest)
    if kind == "last_quarter":
        first = shift_month(*calendar.quarter(*newest)[1], -3)
        return _quarter(phrase, calendar, first, newest)
    return None


def _year_number(text: str) -> int:
    value = int(text)
    return value + 2000 if value < 100 else value


def _month(phrase: str, calendar: ReportingCalendar, year: int, month: int) -> TimeWindow:
    period = calendar.period(year, month)
    label = datetime(year, month, 1).strftime("%B %Y")
    return TimeWindow(phrase, "month", label, period, period)


def _quarter(
    phrase: str, calendar: ReportingCalendar, first: tuple[int, int], newest: tuple[int, int]
) -> TimeWindow:
    number, _ = calendar.quarter(*first)
    label = f"fiscal quarter FY{calendar.fiscal_year(*first)} Q{number}"
    return _span(phrase, "quarter", label, calendar, first, shift_month(*first, 2), newest)


def _year(
    phrase: str, calendar: ReportingCalendar, label_year: int, newest: tuple[int, int]
) -> TimeWindow:
    first = calendar.fiscal_year_start(label_year)
    label = f"fiscal year FY{label_year}"
    return _span(phrase, "year", label, calendar, first, shift_month(*first, 11), newest)


def _span(
    phrase: str,
    grain: str,
    label: str,
    calendar: ReportingCalendar,
    first: tuple[int, int],
    last: tuple[int, int],
    newest: tuple[int, int],
) -> TimeWindow:
    to_date = first <= newest < last
    end = newest if to_date else last
    if to_date:
        label += " to date"
    return TimeWindow(
        phrase, grain, label, calendar.period(*first), calendar.period(*end), to_date=to_date
    )
