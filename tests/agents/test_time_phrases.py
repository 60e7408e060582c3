"""The time windows a question names, resolved against a reporting calendar."""

from __future__ import annotations

from datetime import datetime

import pytest

from agents.rag.calendar import CalendarError, ReportingCalendar
from agents.rag.time_phrases import describe_windows, find_time_windows, names_no_time

COLUMNS = {"month": "ptd_", "quarter": "qtd_", "year": "ytd_"}
APRIL_FY = ReportingCalendar(
    fiscal_year_start_month=4, fiscal_year_named_by="end", publish_day=10, to_date_columns=COLUMNS
)


def windows(question: str, when: str):
    return find_time_windows(question, APRIL_FY, datetime.fromisoformat(when))


@pytest.mark.parametrize(
    ("question", "when", "phrase", "first", "last", "to_date"),
    [
        (
            "How many Gales did we sell last month?",
            "2025-06-19",
            "last month",
            "202505",
            "202505",
            False,
        ),
        # before the publication day the newest month is the previous one
        ("Nova BCR this month?", "2025-10-07", "this month", "202509", "202509", False),
        (
            "Revenue for the previous month, caliber B?",
            "2024-09-12",
            "previous month",
            "202408",
            "202408",
            False,
        ),
        ("Units sold in Q3 FY2024?", "2024-05-22", "Q3 FY2024", "202310", "202312", False),
        ("Units in FY2025 Q2?", "2025-09-23", "FY2025 Q2", "202407", "202409", False),
        (
            "Revenue for fiscal year FY2025?",
            "2025-09-08",
            "fiscal year FY2025",
            "202404",
            "202503",
            False,
        ),
        ("Revenue in FY24?", "2025-09-08", "FY24", "202304", "202403", False),
        (
            "Revenue in December 2022, caliber B?",
            "2024-04-09",
            "December 2022",
            "202212",
            "202212",
            False,
        ),
        ("Invoices for period 202404?", "2025-03-26", "period 202404", "202404", "202404", False),
        ("R&D spend so far this year?", "2024-05-30", "so far this year", "202404", "202405", True),
        (
            "Units for the fiscal year to date?",
            "2025-02-11",
            "fiscal year to date",
            "202404",
            "202502",
            True,
        ),
        ("YTD revenue?", "2025-02-11", "YTD", "202404", "202502", True),
        (
            "Regions ranked by revenue this quarter?",
            "2025-05-10",
            "this quarter",
            "202504",
            "202505",
            True,
        ),
        (
            "Revenue for the current fiscal quarter to date?",
            "2025-05-10",
            "the current fiscal quarter",
            "202504",
            "202505",
            True,
        ),
        (
            "Revenue month by month for the previous fiscal quarter?",
            "2024-08-01",
            "previous fiscal quarter",
            "202404",
            "202406",
            False,
        ),
        ("Our monthly revenue last year?", "2024-12-04", "last year", "202304", "202403", False),
        # a named quarter that has not ended is to date
        ("Revenue in Q1 FY2026?", "2025-05-20", "Q1 FY2026", "202504", "202505", True),
    ],
)
def test_phrases_resolve_to_periods(question, when, phrase, first, last, to_date):
    (window,) = windows(question, when)
    assert (window.phrase, window.first, window.last, window.to_date) == (
        phrase,
        first,
        last,
        to_date,
    )


def test_relative_comparison_bases_are_not_windows():
    assert windows("Titan revenue YoY vs last year?", "2025-06-19") == []
    assert windows("Revenue in the same month last year?", "2025-06-19") == []
    assert windows("How does it compare with last year's figure?", "2025-06-19") == []
    (window,) = windows("Revenue in June 2025 vs last year?", "2025-06-19")
    assert window.phrase == "June 2025"


def test_several_windows_come_in_question_order():
    found = windows("Revenue in Q1 FY2025 compared with March 2024?", "2025-06-19")
    assert [w.phrase for w in found] == ["Q1 FY2025", "March 2024"]


def test_the_description_names_periods_and_to_date_columns():
    when = datetime(2024, 5, 22)
    text = describe_windows(
        windows("How many Deneb vehicles were sold in Q3 FY2024?", "2024-05-22"),
        APRIL_FY,
        when,
        to_date_columns=COLUMNS,
    )
    assert text == (
        "\"Q3 FY2024\" is fiscal quarter FY2024 Q3, months '202310' to '202312': for its total "
        "use the qtd_ columns at period = '202312'."
    )
    month = describe_windows(windows("Sales last month?", "2024-05-22"), APRIL_FY, when)
    assert month == "\"last month\" is period '202404'."  # no columns known
    ytd = describe_windows(windows("Units so far this year?", "2024-05-22"), APRIL_FY, when)
    assert ytd.endswith("its total is the year-to-date figure at period '202405'.")


def test_a_question_without_time_words_gets_the_newest_period():
    when = datetime(2024, 11, 6)
    assert names_no_time("Borealis retail revenue?")
    text = describe_windows([], APRIL_FY, when, question="Our revenue?", to_date_columns=COLUMNS)
    assert text == (
        "The question names no period: use period '202410' (the newest) with the ptd_ columns."
    )
    # a time word the parser does not resolve: no default is claimed
    assert describe_windows([], APRIL_FY, when, question="Revenue over the past 3 weeks?") == ""


def test_bad_to_date_columns_are_rejected():
    with pytest.raises(CalendarError, match="to_date_columns"):
        ReportingCalendar(to_date_columns={"week": "wtd_"})
    with pytest.raises(CalendarError, match="to_date_columns"):
        ReportingCalendar(to_date_columns={"month": ""})
    merged = ReportingCalendar.from_facts([{"publish_day": 10}, {"to_date_columns": COLUMNS}])
    assert merged is not None and merged.to_date_columns == COLUMNS


def test_a_monthly_series_is_asked_month_by_month():
    when = datetime(2024, 12, 4)
    question = "Our monthly revenue last year?"
    text = describe_windows(
        windows(question, "2024-12-04"), APRIL_FY, when, question=question, to_date_columns=COLUMNS
    )
    assert text == (
        "\"last year\" is fiscal year FY2024, months '202304' to '202403': month by month, use "
        "the ptd_ columns of each period from '202304' to '202403'."
    )
