"""Relative dates from the query time and the knowledge base's reporting calendar."""

from __future__ import annotations

from datetime import datetime

import pytest

from agents.rag.calendar import CalendarError, ReportingCalendar

APRIL_FY = ReportingCalendar(fiscal_year_start_month=4, fiscal_year_named_by="end", publish_day=10)


@pytest.mark.parametrize(
    ("when", "expected"),
    [
        # before the 10th the newest period is the previous month
        ("2025-10-07", ["'202509'", "'last month' is '202508'", "FY2026 Q2", "ending '202506'"]),
        ("2025-08-12", ["newest period is '202508'", "FY2026 Q2 ('202507' to '202508'"]),
        # the fiscal year turns in April; last year is the whole previous fiscal year
        ("2024-12-04", ["'202411'", "FY2025 Q3", "FY2024 ('202304' to '202403'"]),
        ("2025-04-25", ["FY2026 Q1", "last quarter is FY2025 Q4, ending '202503'"]),
        ("2025-01-05", ["'202412'", "'last month' is '202411'", "FY2025 Q3"]),
    ],
)
def test_an_april_fiscal_year_with_a_publication_day(when, expected):
    text = APRIL_FY.describe(datetime.fromisoformat(when))
    for part in expected:
        assert part in text, (part, text)


def test_a_calendar_year_published_at_once_and_other_formats():
    plain = ReportingCalendar(period_format="YYYY-MM")
    text = plain.describe(datetime(2025, 1, 3))
    assert "newest period is '2025-01'" in text and "'last month' is '2024-12'" in text
    assert "FY2025 Q1" in text and "last fiscal year is FY2024 ('2024-01' to '2024-12'" in text
    by_start = ReportingCalendar(fiscal_year_start_month=7, fiscal_year_named_by="start")
    assert by_start.fiscal_year(2025, 6) == 2024 and by_start.fiscal_year(2025, 7) == 2025
    assert ReportingCalendar(fiscal_year_start_month=7).fiscal_year(2025, 7) == 2026


def test_facts_from_several_entries_merge_and_bad_ones_are_named():
    merged = ReportingCalendar.from_facts(
        [{"fiscal_year_start_month": 4}, {"publish_day": 10, "unknown": "ignored"}]
    )
    assert merged == APRIL_FY
    assert ReportingCalendar.from_facts([]) is None
    with pytest.raises(CalendarError, match="publish_day 40"):
        ReportingCalendar.from_facts([{"publish_day": 40}])
    with pytest.raises(CalendarError, match="fiscal_year_start_month 13"):
        ReportingCalendar(fiscal_year_start_month=13)
    with pytest.raises(CalendarError, match="period_format"):
        ReportingCalendar(period_format="MM/YYYY")
