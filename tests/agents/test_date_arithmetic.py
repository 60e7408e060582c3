"""Differences of dates stored as text on SQLite: computed in days with julianday() instead of
text minus text (the leading year's difference), before the query runs."""

from __future__ import annotations

import sqlite3

import pytest

from agents.answer import Candidate
from agents.sql.date_arithmetic import DateColumns, with_day_differences
from agents.sql.refine import RefineOptions, Refiner
from kb.target.database import Database

ROWS = [
    ("INC1", "Network", "2023-01-01 06:58:00", "2023-01-02 06:58:00.000000000", "2023-01-01", 3),
    ("INC2", "Network", "2023-01-02 10:52:00", "2023-01-05 10:52:00.000000000", "2023-01-02", 1),
    ("INC3", "Hardware", "2023-03-01 00:00:00", "2023-03-11 12:00:00.000000000", "2023-03-01", 2),
]


@pytest.fixture
def incidents(tmp_path):
    path = tmp_path / "incidents.sqlite"
    with sqlite3.connect(path) as connection:
        connection.execute(
            "CREATE TABLE incidents (number TEXT, category TEXT, opened_at TEXT, closed_at TEXT,"
            " opened_day TEXT, priority INTEGER)"
        )
        connection.executemany("INSERT INTO incidents VALUES (?, ?, ?, ?, ?, ?)", ROWS)
        connection.execute("CREATE TABLE notes (number TEXT, body TEXT, written TEXT)")
        connection.execute("INSERT INTO notes VALUES ('INC1', 'rebooted', 'yesterday')")
    database = Database(f"sqlite:///{path}")
    yield database
    database.close()


def _days(database: Database, sql: str):
    rewritten = with_day_differences(sql, DateColumns(database))
    assert rewritten is not None
    return rewritten, database.execute(rewritten.sql).rows


def test_text_minus_text_of_one_year_is_zero_and_julianday_gives_the_days(incidents):
    sql = "SELECT AVG(closed_at - opened_at) FROM incidents"
    assert incidents.execute(sql).rows == [(0.0,)]  # what the model's query returned
    rewritten, rows = _days(incidents, sql)
    assert (
        rewritten.sql == "SELECT AVG((JULIANDAY(closed_at) - JULIANDAY(opened_at))) FROM incidents"
    )
    assert rows[0][0] == pytest.approx((1 + 3 + 10.5) / 3)
    assert rewritten.notes == [
        "days between dates stored as text: closed_at - opened_at computed with julianday()"
    ]


def test_aliases_joins_date_calls_and_the_reasoning_header_are_kept(incidents):
    sql = (
        "-- resolution time by category\n"
        "SELECT i.category, SUM(DATE(i.closed_at) - DATE(i.opened_day)) AS days "
        "FROM incidents AS i JOIN notes AS n ON n.number = i.number GROUP BY i.category"
    )
    rewritten, rows = _days(incidents, sql)
    assert rewritten.sql.startswith("-- resolution time by category\nSELECT")
    assert "JULIANDAY(DATE(i.closed_at)) - JULIANDAY(DATE(i.opened_day))" in rewritten.sql
    assert rows == [("Network", 1.0)]


def test_a_numeric_cast_of_a_date_is_read_as_the_date(incidents):
    sql = "SELECT MAX(CAST(closed_at AS REAL) - CAST(opened_at AS INTEGER)) FROM incidents"
    assert incidents.execute(sql).rows == [(0.0,)]
    rewritten, rows = _days(incidents, sql)
    assert "MAX((JULIANDAY(closed_at) - JULIANDAY(opened_at)))" in rewritten.sql
    assert rows == [(10.5,)]
    # a cast to text is not a number: left alone
    assert (
        with_day_differences(
            "SELECT CAST(closed_at AS TEXT) - opened_at FROM incidents", DateColumns(incidents)
        )
        is None
    )


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT priority - 1 FROM incidents",  # numbers
        "SELECT closed_at - priority FROM incidents",  # one side is no date
        "SELECT n.written - n.written FROM notes AS n",  # text that is no date
        "SELECT JULIANDAY(closed_at) - JULIANDAY(opened_at) FROM incidents",  # already right
        "SELECT closed_at - opened_at FROM nowhere",  # an unknown table: the database says so
        "not sql at all (",
    ],
)
def test_anything_else_is_left_alone(incidents, sql):
    assert with_day_differences(sql, DateColumns(incidents)) is None


def test_a_column_is_sampled_once(incidents, monkeypatch):
    dates = DateColumns(incidents)
    calls = []
    execute = incidents.execute
    monkeypatch.setattr(
        incidents, "execute", lambda sql, **kw: calls.append(sql) or execute(sql, **kw)
    )
    for _ in range(3):
        assert with_day_differences("SELECT closed_at - opened_at FROM incidents", dates)
    assert len(calls) == 2  # closed_at and opened_at, once each


def test_the_refine_agent_runs_the_difference_in_days_and_says_so(incidents):
    refiner = Refiner(incidents, None, options=RefineOptions())
    ran = refiner.execute(Candidate(sql="SELECT MAX(closed_at - opened_at) FROM incidents"))
    assert ran.results.rows == [(10.5,)]
    assert "JULIANDAY" in ran.sql and ran.notes[0].startswith("days between dates")
