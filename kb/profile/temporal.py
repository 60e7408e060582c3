"""Temporal columns: detecting the ``strptime`` format of date strings, and their range.

``detect_format`` tries :data:`CANDIDATE_FORMATS` on a probe of the distinct values, then
validates the survivors on every distinct value: a format is detected only when it parses all
of them. Day and month are told apart by the values themselves (``%m`` refuses 13 and more),
so ``31/12/2023`` is ``%d/%m/%Y`` and ``12/31/2023`` is ``%m/%d/%Y``. When several formats
parse everything to different dates (``01/02/2023`` alone), the first in the list wins and
the others are reported in ``ambiguous_with``.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache

# Order matters: earlier formats win ties (day-first before month-first).
CANDIDATE_FORMATS: tuple[str, ...] = (
    "%Y-%m-%d",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%d %H:%M:%S.%f",
    "%Y-%m-%d %H:%M",
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%dT%H:%M:%S.%f",
    "%Y-%m-%dT%H:%M:%S%z",
    "%Y-%m-%dT%H:%M",
    "%Y-%m",
    "%Y/%m/%d",
    "%Y/%m/%d %H:%M:%S",
    "%Y.%m.%d",
    "%Y%m%d",
    "%Y%m",
    "%d/%m/%Y",
    "%m/%d/%Y",
    "%d/%m/%Y %H:%M",
    "%m/%d/%Y %H:%M",
    "%d/%m/%Y %H:%M:%S",
    "%m/%d/%Y %H:%M:%S",
    "%m/%d/%Y %I:%M %p",
    "%d/%m/%y",
    "%m/%d/%y",
    "%d-%m-%Y",
    "%m-%d-%Y",
    "%d.%m.%Y",
    "%d.%m.%Y %H:%M",
    "%d.%m.%Y %H:%M:%S",
    "%d.%m.%y",
    "%b %d, %Y",
    "%B %d, %Y",
    "%b %d %Y",
    "%d %b %Y",
    "%d %B %Y",
    "%d-%b-%Y",
    "%d-%b-%y",
    "%b %Y",
    "%B %Y",
    "%a, %d %b %Y %H:%M:%S",
    "%H:%M:%S",
    "%H:%M",
    "%I:%M %p",
)
DIGIT_ONLY_YEARS = (1900, 2100)  # plausible years for formats like %Y%m (else: codes, ids)
_DIGIT_ONLY = re.compile(r"^%[YmdHMS](%[YmdHMS])*$")
_DATE_DIRECTIVES = re.compile(r"%[YymdbBaAjUWxc]")
_TIME_DIRECTIVES = re.compile(r"%[HIMSfpXz]")
_SORTABLE = re.compile(r"^%Y([-/.]?%m([-/.]?%d([ T]%H(:%M(:%S(\.%f)?)?)?)?)?)?$")
_MONTH_NAMES = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
_MONTHS = {name[:3]: i for i, name in enumerate(_MONTH_NAMES, start=1)}
_DIRECTIVE_PATTERNS = {
    "Y": r"(?P<Y>\d{4})",
    "y": r"(?P<y>\d\d)",
    "m": r"(?P<m>1[0-2]|0[1-9]|[1-9])",
    "d": r"(?P<d>3[01]|[12]\d|0[1-9]|[1-9]| [1-9])",
    "H": r"(?P<H>2[0-3]|[0-1]\d|\d)",
    "I": r"(?P<I>1[0-2]|0[1-9]|[1-9])",
    "M": r"(?P<M>[0-5]\d|\d)",
    "S": r"(?P<S>6[0-1]|[0-5]\d|\d)",
    "f": r"(?P<f>[0-9]{1,6})",
    "b": "(?P<b>" + "|".join(sorted(_MONTHS)) + ")",
    "B": "(?P<B>" + "|".join(_MONTH_NAMES) + ")",
    "a": "(?:mon|tue|wed|thu|fri|sat|sun)",
    "p": "(?P<p>am|pm)",
}
MAX_LENGTH = 40
PROBE_SIZE = 48

Temporal = dt.datetime | dt.date | dt.time


@dataclass(frozen=True)
class FormatMatch:
    """A format that parses every value, and the range of the parsed values."""

    format: str
    minimum: dt.datetime
    maximum: dt.datetime
    ambiguous_with: tuple[str, ...] = ()

    @property
    def sortable(self) -> bool:
        """True when text order equals time order (``%Y-%m-%d ...`` with zero padding)."""
        return is_sortable(self.format)


def is_sortable(fmt: str) -> bool:
    """Whether strings in ``fmt`` sort like the times they denote (year first, big to small)."""
    return _SORTABLE.match(fmt) is not None


def parse(value: str, fmt: str) -> dt.datetime | None:
    """``value`` parsed with ``fmt`` (as ``datetime.strptime`` would), or None."""
    parsed = _parser(fmt)(value)
    if parsed is None:
        return None
    if _DIGIT_ONLY.match(fmt) and not DIGIT_ONLY_YEARS[0] <= parsed.year <= DIGIT_ONLY_YEARS[1]:
        return None
    return parsed


@lru_cache(maxsize=256)
def _parser(fmt: str) -> Callable[[str], dt.datetime | None]:
    """A parser for ``fmt``: a regular expression (3x faster than strptime), else strptime."""
    pattern = _regex(fmt)
    if pattern is None:
        return lambda value: _strptime(value, fmt)

    def parse_one(value: str) -> dt.datetime | None:
        match = pattern.fullmatch(value)
        if match is None:
            return None
        try:
            return _build(match.groupdict())
        except ValueError:  # 31 February and the like
            return None

    return parse_one


def _strptime(value: str, fmt: str) -> dt.datetime | None:
    try:
        return dt.datetime.strptime(value, fmt)
    except ValueError:
        return None


def _regex(fmt: str) -> re.Pattern[str] | None:
    parts: list[str] = []
    i = 0
    while i < len(fmt):
        if fmt[i] == "%" and i + 1 < len(fmt):
            directive = _DIRECTIVE_PATTERNS.get(fmt[i + 1])
            if directive is None or f"?P<{fmt[i + 1]}>" in "".join(parts):
                return None
            parts.append(directive)
            i += 2
        else:
            parts.append(r"\s+" if fmt[i].isspace() else re.escape(fmt[i]))
            i += 1
    return re.compile("".join(parts), re.IGNORECASE)


def _build(groups: dict[str, str | None]) -> dt.datetime:
    get = groups.get
    text = get("Y")
    year = int(text) if text else 1900
    text = get("y")
    if text:
        year = int(text) + (2000 if int(text) < 69 else 1900)
    text = get("m")
    month = int(text) if text else 1
    text = get("b") or get("B")
    if text:
        month = _MONTHS[text.lower()[:3]]
    text = get("H")
    hour = int(text) if text else 0
    text = get("I")
    if text:
        hour = int(text) % 12 + (12 if (get("p") or "").lower() == "pm" else 0)
    day, minute, second, fraction = get("d"), get("M"), get("S"), get("f")
    return dt.datetime(
        year,
        month,
        int(day) if day else 1,
        hour,
        int(minute) if minute else 0,
        int(second) if second else 0,
        int(fraction.ljust(6, "0")) if fraction else 0,
    )


def _probe(values: list[str]) -> list[str]:
    if len(values) <= PROBE_SIZE:
        return values
    step = len(values) / PROBE_SIZE
    return [values[int(i * step)] for i in range(PROBE_SIZE)]


def detect_format(values: Iterable[str]) -> FormatMatch | None:
    """The first candidate format that parses every (distinct, stripped) value, or None.

    Args:
        values: non-null string values (duplicates are fine; only distinct ones are parsed).
    """
    distinct = list(dict.fromkeys(v.strip() for v in values))
    if not distinct or any(
        len(v) > MAX_LENGTH or not any(ch.isdigit() for ch in v) for v in distinct
    ):
        return None
    probe = _probe(distinct)
    candidates = [f for f in CANDIDATE_FORMATS if all(parse(v, f) is not None for v in probe)]
    passing: list[tuple[str, list[dt.datetime]]] = []
    for fmt in candidates:
        dates = [d for d in (parse(v, fmt) for v in distinct) if d is not None]
        if len(dates) == len(distinct):
            passing.append((fmt, dates))
    if not passing:
        return None
    fmt, parsed = passing[0]
    ambiguous = tuple(other for other, dates in passing[1:] if dates != parsed)
    return FormatMatch(fmt, min(parsed), max(parsed), ambiguous)


def native_format(value: Temporal) -> str:
    """The display format for a date/time value of a native SQL temporal type."""
    if isinstance(value, dt.datetime):
        return "%Y-%m-%d %H:%M:%S"
    if isinstance(value, dt.date):
        return "%Y-%m-%d"
    return "%H:%M:%S"


def iso(value: Temporal, fmt: str | None = None) -> str:
    """ISO 8601 text of ``value``: only the date (or time) part when ``fmt`` has no other."""
    if isinstance(value, dt.datetime) and fmt:
        if not _TIME_DIRECTIVES.search(fmt):
            return value.date().isoformat()
        if not _DATE_DIRECTIVES.search(fmt):
            return value.time().isoformat()
    return value.isoformat()


def display(value: Temporal, fmt: str) -> str:
    """``value`` printed in ``fmt``."""
    return value.strftime(fmt)


def comparable(values: Iterable[Temporal]) -> list[Temporal]:
    """Values of the commonest kind among datetimes, dates and times (so min/max work)."""
    groups: dict[tuple[type, bool], list[Temporal]] = {}
    for value in values:
        aware = isinstance(value, (dt.datetime, dt.time)) and value.tzinfo is not None
        groups.setdefault((type(value), aware), []).append(value)
    return max(groups.values(), key=len) if groups else []
