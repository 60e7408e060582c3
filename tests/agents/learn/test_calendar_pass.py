"""The calendar pass: the reporting calendar a document states, read without the model, on a
small profiled database with a period column and to-date amount columns; and through
``extract_documents`` into a temporal rule whose facts resolve "this month"."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from agents.learn.documents import extract_documents
from agents.learn.documents.calendar_pass import section_calendar
from agents.learn.mine.schema_view import SchemaView
from agents.rag.calendar import ReportingCalendar
from kb.documents import read_document
from kb.store import KnowledgeStore
from tests.agents.learn.conftest import profiled

CALENDAR_PAGE = """# Calendar

## Fiscal calendar

The fiscal year runs from April to March and is named after the year it ends in
(FY2025 = April 2024 to March 2025). A fiscal quarter is the qtd_amt of its last month.

## Data refresh

Data is refreshed on the 10th: each month's figures are published on the 10th of that month.

## Regions

Headquarters is excluded from rankings.
"""


@pytest.fixture
def view(tmp_path: Path) -> Iterator[tuple[KnowledgeStore, SchemaView]]:
    path = tmp_path / "ledger.sqlite"
    with sqlite3.connect(path) as connection:
        connection.execute(
            "CREATE TABLE income (period TEXT, region TEXT, ptd_amt_usd REAL, "
            "qtd_amt_usd REAL, ytd_amt_usd REAL)"
        )
        rows = [
            (f"{year}{month:02d}", region, 1.0, 2.0, 3.0)
            for year in (2023, 2024)
            for month in range(1, 13)
            for region in ("EU", "US")
        ]
        connection.executemany("INSERT INTO income VALUES (?, ?, ?, ?, ?)", rows)
    store, database = profiled(tmp_path, path, "ledger")
    database.close()
    yield store, SchemaView(store, "ledger")
    store.close()


def test_the_facts_a_calendar_page_states(view):
    _store, schema = view
    found = section_calendar(CALENDAR_PAGE, schema)
    assert found is not None
    assert found.facts == {
        "fiscal_year_start_month": 4,
        "fiscal_year_named_by": "end",
        "publish_day": 10,
        "to_date_columns": {"month": "ptd_", "quarter": "qtd_", "year": "ytd_"},
        "period_format": "YYYYMM",
        "period_column": "period",
    }
    assert any("runs from April to March" in s for s in found.sentences)
    assert not any("Headquarters" in s for s in found.sentences)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The financial year starts in July.", {"fiscal_year_start_month": 7}),
        (
            "FY24 = July 2023 to June 2024.",
            {"fiscal_year_start_month": 7, "fiscal_year_named_by": "end"},
        ),
        (
            "FY2023 covers October 2023 through September 2024.",
            {"fiscal_year_start_month": 10, "fiscal_year_named_by": "start"},
        ),
        (
            "The fiscal year begins on 1 October and is named after the year it starts in.",
            {"fiscal_year_start_month": 10, "fiscal_year_named_by": "start"},
        ),
        ("Figures are published on the 3rd of each month.", {"publish_day": 3}),
    ],
)
def test_each_phrasing_gives_its_fact(view, text, expected):
    _store, schema = view
    found = section_calendar(text, schema)
    assert found is not None
    # no to-date figure mentioned: the schema's to-date columns are not claimed
    assert found.facts == {**expected, "period_format": "YYYYMM", "period_column": "period"}


@pytest.mark.parametrize(
    "text",
    [
        "Headquarters is excluded from rankings.",  # no calendar fact
        "The fiscal year runs from April. Elsewhere: the fiscal year starts in January.",
        "Data is refreshed on the 31st.",  # not a day every month has: the calendar refuses
        "YTD means the running total.",  # a to-date figure alone states no calendar
    ],
    ids=["none", "contradiction", "invalid-day", "to-date-alone"],
)
def test_no_rule_without_a_clear_calendar_fact(view, text):
    _store, schema = view
    assert section_calendar(text, schema) is None


def test_the_calendar_rule_is_extracted_and_resolves_this_month(view, tmp_path):
    store, _schema = view
    page = tmp_path / "calendar.md"
    page.write_text(CALENDAR_PAGE, encoding="utf-8")
    report = extract_documents(store, [read_document(page)], None, database="ledger", activate=True)
    rules = [e for e in store.get_many(report.candidate_ids).values() if e.type == "rule"]
    assert sorted(r.name for r in rules) == [
        "Reporting calendar: Data refresh",
        "Reporting calendar: Fiscal calendar",
    ]
    assert all(r.metadata["document"]["name"] == "calendar.md" for r in rules)
    calendar = ReportingCalendar.from_facts(r.content_resources["calendar"] for r in rules)
    assert calendar is not None
    # asked on 5 March 2025, before the 10th: February's figures are the newest
    assert calendar.newest_month(datetime(2025, 3, 5)) == (2025, 2)
    assert calendar.fiscal_year(2025, 3) == 2025 and calendar.fiscal_year(2025, 4) == 2026
    assert calendar.period_column == "period"  # the one column holding periods
    # the schema view the mining reads sees the same calendar
    assert SchemaView(store, "ledger").calendar == calendar


def test_periods_under_two_names_name_no_period_column(tmp_path: Path):
    path = tmp_path / "two.sqlite"
    with sqlite3.connect(path) as connection:
        for table, column in (("income", "period"), ("budget", "fiscal_period")):
            connection.execute(f"CREATE TABLE {table} ({column} TEXT, amount REAL)")
            rows = [(f"2024{month:02d}", 1.0) for month in range(1, 13)]
            connection.executemany(f"INSERT INTO {table} VALUES (?, ?)", rows)
    store, database = profiled(tmp_path, path, "two")
    database.close()
    try:
        found = section_calendar("The fiscal year starts in April.", SchemaView(store, "two"))
    finally:
        store.close()
    assert found is not None and found.facts["period_format"] == "YYYYMM"
    assert "period_column" not in found.facts  # which one a question's period is: unsaid
