"""'now' on data that ends in the past: an empty result is run again with 'now' read as the
newest date of the columns compared with it, and kept (noted) only when that gives rows."""

from __future__ import annotations

import sqlite3
from datetime import datetime

import pytest
from sqlalchemy import create_engine, text

from agents.answer import Candidate
from agents.sql.now_anchor import NowAnchor
from agents.sql.refine import Refiner
from kb.target.database import Database
from tests.agents.scripted import ScriptedLLM

ASKED = [{"role": "user", "content": "Expenses of the last three months?"}]
TODAY = datetime(2026, 12, 3)
LAST_3_MONTHS = (
    "SELECT department, SUM(amount) FROM expenses "
    "WHERE processed_date >= DATE('now', '-3 months') GROUP BY department"
)


@pytest.fixture
def expenses(tmp_path):
    path = tmp_path / "expenses.sqlite"
    with sqlite3.connect(path) as connection:
        connection.execute(
            "CREATE TABLE expenses (id INTEGER, department TEXT, amount REAL, processed_date TEXT)"
        )
        connection.execute("CREATE TABLE staff (name TEXT, department TEXT, start_date TEXT)")
        connection.executemany(
            "INSERT INTO expenses VALUES (?, ?, ?, ?)",
            [
                (1, "HR", 10.0, "2023-01-15 10:00:00"),
                (2, "IT", 20.0, "2023-05-02 09:30:00"),
                (3, "HR", 5.0, "2023-06-20 16:45:10"),
                (4, "IT", 7.5, "2023-06-30 08:00:00"),
            ],
        )
        connection.execute("INSERT INTO staff VALUES ('Ann', 'HR', '2020-01-01')")
    database = Database(f"sqlite:///{path}")
    yield database
    database.close()


def test_now_is_read_as_the_newest_date_of_the_compared_column(expenses):
    anchored = NowAnchor(expenses, today=TODAY).anchored(LAST_3_MONTHS)
    assert anchored is not None
    assert "DATE('2023-06-30 08:00:00', '-3 months')" in anchored.sql
    assert anchored.notes == [
        "no rows at today's date: the data ends at 2023-06-30 08:00:00, read as 'now'"
    ]


@pytest.mark.parametrize(
    "sql, expected",
    [
        # qualified through an alias, CURRENT_DATE as the date alone
        (
            "SELECT COUNT(*) FROM expenses AS e WHERE e.processed_date > CURRENT_DATE",
            "e.processed_date > '2023-06-30'",
        ),
        # julianday arithmetic: the column in the same comparison
        (
            "SELECT id FROM expenses WHERE JULIANDAY('now') - JULIANDAY(processed_date) < 30",
            "JULIANDAY('2023-06-30 08:00:00')",
        ),
        # a join: the unqualified column is the one table's that has it
        (
            "SELECT s.name FROM staff AS s JOIN expenses AS x ON x.department = s.department "
            "WHERE processed_date >= DATETIME('now', '-7 days')",
            "DATETIME('2023-06-30 08:00:00', '-7 days')",
        ),
    ],
)
def test_forms_of_now_and_ways_to_name_the_column(expenses, sql, expected):
    anchored = NowAnchor(expenses, today=TODAY).anchored(sql)
    assert anchored is not None and expected in anchored.sql


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT SUM(amount) FROM expenses",  # no now
        "SELECT DATE('now')",  # now in no comparison
        "SELECT id FROM expenses WHERE department = 'now'",  # 'now' compared with no date
        "SELECT id FROM expenses, staff WHERE department >= DATE('now')",  # ambiguous column
        "not sql (",
    ],
)
def test_queries_without_a_now_to_anchor_are_left_alone(expenses, sql):
    assert NowAnchor(expenses, today=TODAY).anchored(sql) is None


def test_data_that_reaches_today_keeps_the_real_now(expenses):
    assert NowAnchor(expenses, today=datetime(2023, 6, 30, 12)).anchored(LAST_3_MONTHS) is None


def test_refine_keeps_the_anchored_query_only_when_it_returns_rows(expenses):
    refiner = Refiner(expenses, ScriptedLLM([AssertionError("the model must not be asked")]))
    refiner.now = NowAnchor(expenses, today=TODAY)
    ran = refiner.refine(Candidate(sql=LAST_3_MONTHS), ASKED)
    assert sorted(ran.results.rows) == [("HR", 5.0), ("IT", 27.5)]
    assert any(n.startswith("no rows at today's date") for n in ran.notes)
    # still empty when anchored (no department 'Ops'): no anchored query is kept
    refiner = Refiner(expenses)
    refiner.now = NowAnchor(expenses, today=TODAY)
    empty = (
        "SELECT SUM(amount) FROM expenses WHERE department = 'Ops' "
        "AND processed_date >= DATE('now', '-3 months')"
    )
    kept = refiner.refine(Candidate(sql=empty), ASKED)
    assert kept.sql == empty and not kept.results.has_data


def test_on_postgresql_now_becomes_a_typed_instant(fresh_pg_database):
    engine = create_engine(fresh_pg_database)
    with engine.begin() as connection:
        connection.execute(text('CREATE TABLE "Tickets" (id INT, "Opened" TIMESTAMP)'))
        connection.execute(
            text("INSERT INTO \"Tickets\" VALUES (1, '2024-03-01 10:00'), (2, '2024-03-20 12:30')")
        )
    engine.dispose()
    database = Database(fresh_pg_database)
    try:
        refiner = Refiner(database)
        refiner.now = NowAnchor(database, today=TODAY)
        sql = (
            'SELECT t.id FROM "Tickets" AS t WHERE t."Opened" >= NOW() - INTERVAL \'14 days\' '
            "AND t.\"Opened\" >= CURRENT_DATE - INTERVAL '1 day'"
        )
        ran = refiner.refine(Candidate(sql=sql), ASKED)
        assert ran.results.rows == [(2,)]
        assert "CAST('2024-03-20 12:30:00' AS TIMESTAMP)" in ran.sql
        assert "CAST('2024-03-20' AS DATE)" in ran.sql
    finally:
        database.close()
