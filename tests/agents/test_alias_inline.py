"""A SELECT alias the database cannot read where it is used (a window on SQLite, WHERE on
PostgreSQL) is written out in full before the model is asked, and kept only if it runs."""

from __future__ import annotations

import sqlite3

import pytest
from sqlalchemy import create_engine, text

from agents.answer import Candidate
from agents.sql.alias_inline import inline_alias, missing_column
from agents.sql.refine import Refiner
from kb.target.database import Database
from tests.agents.scripted import ScriptedLLM

ASKED = [{"role": "user", "content": "Units by discount band and their growth?"}]
BANDS = (
    "SELECT CASE WHEN discount < 0.1 THEN 'low' ELSE 'high' END AS band, period, "
    "SUM(units) AS units, "
    "SUM(units) - LAG(SUM(units)) OVER (PARTITION BY band ORDER BY period) AS growth "
    "FROM sales GROUP BY band, period ORDER BY band, period"
)


@pytest.mark.parametrize(
    "error, name",
    [
        ("no such column: band", "band"),
        ('(sqlite3.OperationalError) no such column: "band"', "band"),
        ('column "total" does not exist', "total"),
        ("no such column: s.band", None),  # a table's column: not an alias
        ('near "FROM": syntax error', None),
    ],
)
def test_the_missing_name_is_read_from_the_error(error, name):
    assert missing_column(error) == name


def test_the_alias_is_written_out_in_a_window_where_and_the_select_list_only():
    inlined = inline_alias(BANDS, "band")
    assert inlined is not None and inlined.notes == ["alias written out: band (1 references)"]
    assert "PARTITION BY (CASE WHEN discount < 0.1 THEN 'low' ELSE 'high' END)" in inlined.sql
    assert inlined.sql.endswith("GROUP BY band, period ORDER BY band, period")  # read there
    where = inline_alias("SELECT amount * 2 AS double FROM t WHERE double > 4", "double")
    assert where is not None and where.sql.endswith("WHERE (amount * 2) > 4")
    listed = inline_alias("SELECT a + 1 AS b, b * 2 AS c FROM t", "b")
    assert listed is not None and listed.sql == "SELECT a + 1 AS b, (a + 1) * 2 AS c FROM t"


@pytest.mark.parametrize(
    "sql, name",
    [
        ("SELECT a FROM t WHERE band = 1", "band"),  # no such alias
        ("SELECT a AS band FROM t GROUP BY band ORDER BY band", "band"),  # read where used
        ("SELECT a AS band FROM t WHERE a IN (SELECT band FROM u)", "band"),  # another SELECT
        ("not sql (", "band"),
    ],
)
def test_nothing_to_write_out_leaves_the_query_alone(sql, name):
    assert inline_alias(sql, name) is None


@pytest.fixture
def sales(tmp_path):
    path = tmp_path / "sales.sqlite"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE sales (period TEXT, discount REAL, units INTEGER)")
        connection.executemany(
            "INSERT INTO sales VALUES (?, ?, ?)",
            [("202401", 0.05, 10), ("202401", 0.2, 4), ("202402", 0.05, 12), ("202402", 0.2, 3)],
        )
    database = Database(f"sqlite:///{path}")
    yield database
    database.close()


def test_refine_writes_the_alias_out_without_asking_the_model(sales):
    llm = ScriptedLLM([AssertionError("the model must not be asked")])
    ran = Refiner(sales, llm).refine(Candidate(sql=BANDS), ASKED)
    assert ran.ok and llm.calls == [] and ran.repairs == 0
    assert ran.results.rows == [
        ("high", "202401", 4, None),
        ("high", "202402", 3, -1),
        ("low", "202401", 10, None),
        ("low", "202402", 12, 2),
    ]
    assert "alias written out: band (1 references)" in ran.notes


def test_on_postgresql_an_alias_in_where_is_written_out(fresh_pg_database):
    engine = create_engine(fresh_pg_database)
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE pnl (amount REAL)"))
        connection.execute(text("INSERT INTO pnl VALUES (1), (5), (9)"))
    engine.dispose()
    database = Database(fresh_pg_database)
    try:
        sql = "SELECT amount * 2 AS doubled FROM pnl WHERE doubled > 4 ORDER BY doubled"
        ran = Refiner(database).refine(Candidate(sql=sql), ASKED)
        assert ran.ok and ran.results.rows == [(10.0,), (18.0,)]
        assert ran.sql.endswith("WHERE (amount * 2) > 4 ORDER BY doubled")
    finally:
        database.close()
