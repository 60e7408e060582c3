"""Differences of dates stored as text on SQLite: computed in days with julianday() instead of
text minus text (the leading year's difference), before the query runs."""

from __future__ import annotations

import sqlite3

import pytest

from agents.answer import Candidate
from agents.sql.date_arithmetic import DateColumns, with_day_differences
from agents.sql.default_filters import DefaultFilter
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


def test_a_date_or_fractional_cast_of_a_date_is_read_as_the_date(incidents):
    real = "SELECT MAX(CAST(closed_at AS REAL) - CAST(opened_at AS REAL)) FROM incidents"
    assert incidents.execute(real).rows == [(0.0,)]
    rewritten, rows = _days(incidents, real.replace("opened_at AS REAL", "opened_at AS DATE"))
    assert "MAX((JULIANDAY(closed_at) - JULIANDAY(opened_at)))" in rewritten.sql
    assert rows == [(10.5,)]
    # a cast to text is no date, one to INTEGER may be a deliberate difference of years
    for cast in ("TEXT", "INTEGER"):
        query = f"SELECT CAST(closed_at AS {cast}) - CAST(opened_at AS {cast}) FROM incidents"
        assert with_day_differences(query, DateColumns(incidents)) is None


def test_columns_are_followed_through_ctes_derived_tables_and_min_max(incidents):
    cte = (
        "WITH r AS (SELECT closed_at AS shut, opened_at FROM incidents WHERE category = "
        "'Network') SELECT AVG(r.shut - opened_at) FROM r"
    )
    rewritten, rows = _days(incidents, cte)
    assert "AVG((JULIANDAY(r.shut) - JULIANDAY(opened_at)))" in rewritten.sql
    assert rows[0][0] == pytest.approx(2.0)
    derived = (
        "SELECT MAX(t.c) - MIN(t.o) FROM (SELECT closed_at AS c, opened_at AS o FROM incidents)"
        " AS t"
    )
    rewritten, rows = _days(incidents, derived)
    assert "JULIANDAY(MAX(t.c)) - JULIANDAY(MIN(t.o))" in rewritten.sql
    assert rows[0][0] == pytest.approx(
        69 + (5 * 60 + 2) / 1440, abs=1e-6
    )  # Jan 1 06:58 -> Mar 11 12:00
    correlated = (
        "SELECT number FROM incidents AS i WHERE EXISTS (SELECT 1 FROM notes AS n "
        "WHERE n.number = i.number AND i.closed_at - i.opened_at > 0.5)"
    )
    rewritten, rows = _days(incidents, correlated)
    assert "(JULIANDAY(i.closed_at) - JULIANDAY(i.opened_at)) > 0.5" in rewritten.sql
    assert rows == [("INC1",)]


def test_a_timestamp_julianday_cannot_read_is_no_date(tmp_path):
    path = tmp_path / "offsets.sqlite"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE t (a TIMESTAMP, b TIMESTAMP, c DATE, d DATE)")
        connection.execute(
            "INSERT INTO t VALUES ('2023-01-01T00:00:00+0000', '2023-01-02T00:00:00+0000',"
            " '2023-01-01', '2023-02-01')"
        )
    database = Database(f"sqlite:///{path}")
    try:
        assert with_day_differences("SELECT b - a FROM t", DateColumns(database)) is None
        _, rows = _days(database, "SELECT d - c FROM t")  # declared DATE, held as text
        assert rows == [(31.0,)]
    finally:
        database.close()


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


def test_when_the_default_filters_break_the_query_the_day_differences_stay(incidents):
    network = DefaultFilter("category", "Network", "Network desk")
    refiner = Refiner(incidents, None, options=RefineOptions(default_filters=(network,)))
    first = refiner.execute(Candidate(sql="SELECT MAX(closed_at - opened_at) FROM incidents"))
    assert first.results.rows == [(3.0,)]  # Network's incidents only, in days
    assert "category = 'Network'" in first.sql
    path = incidents.url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as connection:  # the filter's column is gone since
        connection.execute("ALTER TABLE incidents RENAME COLUMN category TO kind")
    ran = refiner.execute(Candidate(sql="SELECT MAX(closed_at - opened_at) FROM incidents"))
    assert ran.results.rows == [(10.5,)]
    assert ran.sql == "SELECT MAX((JULIANDAY(closed_at) - JULIANDAY(opened_at))) FROM incidents"
    assert ran.notes[0].startswith("not kept (default filter added: ")
    assert ran.notes[1].startswith("days between dates")
