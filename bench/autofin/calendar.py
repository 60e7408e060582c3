"""Periods and AutoFin's fiscal calendar.

A period is a month written ``'YYYYMM'`` (text). The fiscal year runs April to March and is named
after the calendar year it ends in: FY2025 is April 2024 to March 2025. Fiscal quarters follow
it (Q1 = April to June, ..., Q4 = January to March). A month's figures are published on the
10th of that month: before the 10th, the newest reporting period ("this month") is the previous
month (see `reporting_period`).
"""

from __future__ import annotations

from datetime import datetime

FIRST_PERIOD = "202001"
LAST_PERIOD = "202512"
SIMULATION_START = "201804"
FISCAL_YEAR_START_MONTH = 4
REFRESH_DAY = 10
MONTH_NAMES = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def make_period(year: int, month: int) -> str:
    """``make_period(2025, 2) == '202502'``."""
    return f"{year:04d}{month:02d}"


def split_period(period: str) -> tuple[int, int]:
    """``split_period('202502') == (2025, 2)``."""
    return int(period[:4]), int(period[4:])


def shift(period: str, months: int) -> str:
    """The period ``months`` later (earlier when negative)."""
    year, month = split_period(period)
    index = year * 12 + month - 1 + months
    return make_period(index // 12, index % 12 + 1)


def months_between(first: str, last: str) -> int:
    """How many months ``last`` is after ``first``."""
    (y1, m1), (y2, m2) = split_period(first), split_period(last)
    return (y2 - y1) * 12 + (m2 - m1)


def span(first: str, last: str) -> list[str]:
    """Every period from ``first`` to ``last``, both included."""
    return [shift(first, k) for k in range(months_between(first, last) + 1)]


def fiscal_year(period: str) -> int:
    """The fiscal year (named by the year it ends in) a period belongs to."""
    year, month = split_period(period)
    return year + 1 if month >= FISCAL_YEAR_START_MONTH else year


def fiscal_year_label(period: str) -> str:
    """``fiscal_year_label('202504') == 'FY2026'``."""
    return f"FY{fiscal_year(period)}"


def fiscal_month(period: str) -> int:
    """1 for April, ..., 12 for March."""
    _, month = split_period(period)
    return (month - FISCAL_YEAR_START_MONTH) % 12 + 1


def fiscal_quarter(period: str) -> int:
    """1 (April to June) to 4 (January to March)."""
    return (fiscal_month(period) - 1) // 3 + 1


def quarter_label(period: str) -> str:
    """``'Q1'`` to ``'Q4'``."""
    return f"Q{fiscal_quarter(period)}"


def quarter_end(period: str) -> str:
    """The last period of the fiscal quarter ``period`` is in."""
    return shift(period, 2 - (fiscal_month(period) - 1) % 3)


def quarter_periods(period: str) -> list[str]:
    """The three periods of the fiscal quarter ``period`` is in."""
    end = quarter_end(period)
    return span(shift(end, -2), end)


def fiscal_year_end(year: int) -> str:
    """Last period of fiscal year ``year``: ``fiscal_year_end(2025) == '202503'``."""
    return make_period(year, FISCAL_YEAR_START_MONTH - 1)


def fiscal_year_periods(year: int, *, until: str | None = None) -> list[str]:
    """The periods of fiscal year ``year``, optionally only those up to ``until``."""
    periods = span(shift(fiscal_year_end(year), -11), fiscal_year_end(year))
    return [p for p in periods if until is None or p <= until]


def reporting_period(query_time: datetime) -> str:
    """The newest published period at ``query_time``: "this month" in a question.

    Data is refreshed on the 10th, so before the 10th "this month" means the previous month.
    """
    current = make_period(query_time.year, query_time.month)
    return current if query_time.day >= REFRESH_DAY else shift(current, -1)


def month_label(period: str) -> str:
    """``month_label('202502') == 'February 2025'``."""
    year, month = split_period(period)
    return f"{MONTH_NAMES[month - 1]} {year}"
