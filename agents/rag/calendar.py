"""Relative dates resolved from the query time and the knowledge base's reporting calendar.

A small model asked "revenue last quarter?" on 7 October, in a company whose fiscal year starts
in April and whose figures for a month are published on the 10th, rarely works out that the
newest published period is September and that "last quarter" is fiscal Q1 ending in June. The
knowledge base says how the calendar works; this module does the arithmetic and the prompt
states the result.

The facts come from knowledge entries (usually temporal rules) whose ``content_resources`` hold
a ``calendar`` mapping; several entries may each hold some of the facts:

- ``fiscal_year_start_month``: 1-12 (default 1, the calendar year);
- ``fiscal_year_named_by``: ``"end"`` (FY2025 = April 2024 to March 2025) or ``"start"``;
- ``publish_day``: the day of the month from which that month's figures are published (before
  it, the newest period is the previous month; default: published at once);
- ``period_format``: how periods are written: ``"YYYYMM"`` (default) or ``"YYYY-MM"``;
- ``to_date_columns``: how the columns of to-date figures start, per grain, e.g.
  ``{"month": "ptd_", "quarter": "qtd_", "year": "ytd_"}`` (optional; see
  ``agents.rag.time_phrases``);
- ``period_column``: the column that holds the period (optional). With it, a query that filters
  that column on one period other than the one the question's time window resolves to is
  given the question's (``agents.sql.period_pin``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

GRAINS = ("month", "quarter", "year")
PERIOD_FORMATS = {"YYYYMM": "{y:04d}{m:02d}", "YYYY-MM": "{y:04d}-{m:02d}"}


class CalendarError(ValueError):
    """Calendar facts in the knowledge base that cannot be used (names the offending fact)."""


@dataclass(frozen=True)
class ReportingCalendar:
    """A fiscal calendar with a publication lag."""

    fiscal_year_start_month: int = 1
    fiscal_year_named_by: str = "end"
    publish_day: int | None = None
    period_format: str = "YYYYMM"
    to_date_columns: Mapping[str, str] | None = None
    period_column: str | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.fiscal_year_start_month <= 12:
            raise CalendarError(f"fiscal_year_start_month {self.fiscal_year_start_month!r}")
        if self.fiscal_year_named_by not in ("end", "start"):
            raise CalendarError(f"fiscal_year_named_by {self.fiscal_year_named_by!r}")
        if self.publish_day is not None and not 1 <= self.publish_day <= 28:
            raise CalendarError(f"publish_day {self.publish_day!r} (1-28)")
        if self.period_format not in PERIOD_FORMATS:
            raise CalendarError(f"period_format {self.period_format!r}")
        columns = self.to_date_columns
        if columns is not None and (
            not isinstance(columns, Mapping)
            or not set(columns) <= set(GRAINS)
            or not all(isinstance(v, str) and v for v in columns.values())
        ):
            raise CalendarError(f"to_date_columns {columns!r} (grains {', '.join(GRAINS)})")
        column = self.period_column
        if column is not None and not (isinstance(column, str) and column.strip()):
            raise CalendarError(f"period_column {column!r} (a column name)")

    @classmethod
    def from_facts(cls, facts: Iterable[Mapping[str, Any]]) -> ReportingCalendar | None:
        """Merge ``calendar`` mappings (later ones win); None when there are none."""
        merged: dict[str, Any] = {}
        for fact in facts:
            merged.update({k: v for k, v in fact.items() if k in cls.__dataclass_fields__})
        return cls(**merged) if merged else None

    # ------------------------------------------------------------------ arithmetic
    def period(self, year: int, month: int) -> str:
        return PERIOD_FORMATS[self.period_format].format(y=year, m=month)

    def newest_month(self, when: datetime) -> tuple[int, int]:
        """The newest published month at ``when``."""
        if self.publish_day is not None and when.day < self.publish_day:
            return shift_month(when.year, when.month, -1)
        return when.year, when.month

    @property
    def _label_offset(self) -> int:
        """Label year minus the year the fiscal year starts in."""
        named_by_start = self.fiscal_year_start_month == 1 or self.fiscal_year_named_by == "start"
        return 0 if named_by_start else 1

    def fiscal_year(self, year: int, month: int) -> int:
        """The label year of the fiscal year holding ``year``-``month``."""
        first_year = year if month >= self.fiscal_year_start_month else year - 1
        return first_year + self._label_offset

    def fiscal_year_start(self, label: int) -> tuple[int, int]:
        return label - self._label_offset, self.fiscal_year_start_month

    def quarter(self, year: int, month: int) -> tuple[int, tuple[int, int]]:
        """The fiscal quarter (1-4) of a month, and the quarter's first month."""
        offset = (month - self.fiscal_year_start_month) % 12
        return offset // 3 + 1, shift_month(year, month, -(offset % 3))

    # ------------------------------------------------------------------ prompt text
    def describe(self, when: datetime) -> str:
        """The relative dates at ``when``, in one paragraph for the prompt."""
        year, month = self.newest_month(when)
        newest = self.period(year, month)
        last = self.period(*shift_month(year, month, -1))
        fy = self.fiscal_year(year, month)
        quarter, quarter_first = self.quarter(year, month)
        prev_quarter_end = shift_month(*quarter_first, -1)
        prev_quarter, _ = self.quarter(*prev_quarter_end)
        prev_quarter_fy = self.fiscal_year(*prev_quarter_end)
        fy_first = self.fiscal_year_start(fy)
        last_fy_first = shift_month(*fy_first, -12)
        last_fy_end = shift_month(*fy_first, -1)
        published = (
            f"; a month's figures are published on day {self.publish_day}"
            if self.publish_day
            else ""
        )
        return (
            f"Dates at {when.date().isoformat()}{published}: the newest period is '{newest}' "
            f"(it is 'this month', 'the current month' and the period of a question that names "
            f"none); 'last month' is '{last}'. This fiscal quarter is FY{fy} Q{quarter} "
            f"('{self.period(*quarter_first)}' to '{newest}', quarter-to-date at '{newest}'); "
            f"last quarter is FY{prev_quarter_fy} Q{prev_quarter}, ending "
            f"'{self.period(*prev_quarter_end)}'. This fiscal year is FY{fy} "
            f"('{self.period(*fy_first)}' to '{newest}', year-to-date at '{newest}'); last "
            f"fiscal year is FY{fy - 1} ('{self.period(*last_fy_first)}' to "
            f"'{self.period(*last_fy_end)}', the full year at '{self.period(*last_fy_end)}')."
        )


def shift_month(year: int, month: int, months: int) -> tuple[int, int]:
    """The month ``months`` after (or before, when negative) ``year``-``month``."""
    index = year * 12 + (month - 1) + months
    return index // 12, index % 12 + 1
