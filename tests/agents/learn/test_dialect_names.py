"""Experiences store their target's SQLAlchemy backend name ("postgresql", "mssql"); the
learning code reads their SQL in sqlglot's dialect of that name ("postgres", "tsql"): the
SQL facts, the CoT check, and the mining's value and overlap queries on a real PostgreSQL
target (sqlglot refused "postgresql", which failed every mine or extract job there)."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text

from agents.learn.cot import check_cot
from agents.learn.cot.sql_parts import read_sql
from agents.learn.mine.schema_view import SchemaView
from agents.learn.mine.sql_facts import sql_facts
from agents.learn.synth.variants import parse, sql_key
from kb.target.database import Database

SQL = "SELECT name FROM singer WHERE country = 'France' AND age > 30"


@pytest.mark.parametrize("dialect", ["postgresql", "mssql", "sqlite", "postgres"])
def test_backend_names_are_read_in_their_sqlglot_dialect(dialect):
    facts = sql_facts(SQL, dialect)
    assert facts.tables == ["singer"]
    assert read_sql(SQL, dialect) is not None
    assert parse(SQL, dialect) is not None
    assert sql_key(SQL, dialect) == sql_key(SQL.lower().replace("france", "France"), dialect)


TABLES = {
    "river": ["river_name", "traverse"],
    "state": ["state_name", "capital"],
    "city": ["city_name", "state_name"],
}


def test_value_and_overlap_checks_query_a_postgresql_target(geo, fresh_pg_database):
    store, geoquery = geo  # profiled from SQLite; the same rows copied to PostgreSQL
    engine = create_engine(fresh_pg_database)
    with engine.begin() as connection:
        for table, columns in TABLES.items():
            connection.execute(text(f"CREATE TABLE {table} ({' TEXT, '.join(columns)} TEXT)"))
            rows = geoquery.execute(f"SELECT {', '.join(columns)} FROM {table}", max_rows=10_000)
            insert = f"INSERT INTO {table} VALUES ({', '.join(':' + c for c in columns)})"
            connection.execute(
                text(insert), [dict(zip(columns, row, strict=True)) for row in rows.rows]
            )
    engine.dispose()
    with Database(fresh_pg_database) as target:
        view = SchemaView(store, "geoquery", target=target)
        traverse, capital = view.column("river", "traverse"), view.column("state", "capital")
        assert view.overlap(traverse, capital) == "disjoint"  # states vs cities, counted there
        assert view.overlap(traverse, view.column("state", "state_name")) == "shared"
        city = view.column("city", "city_name")
        assert view.value_check(city, "austin") == "found"
        assert view.value_check(city, "atlantis") == "missing"


def test_a_cot_check_reads_sqlalchemy_s_postgresql_name():
    """An experience on a PostgreSQL target records ``postgresql``; its CoT is checked as
    on SQLite (the tokenizer once refused the name and every backticked part was absent)."""
    sql = "SELECT SUM(amount) FROM sales WHERE region = 'EU'"
    explanation = (
        "1. Read the `sales` table.\n2. Keep the rows where `region = 'EU'`.\n"
        "3. Add up the amounts: `SUM(amount)`."
    )
    question = "What is the total amount of sales in the EU?"
    on_sqlite = check_cot(question, sql, explanation, dialect="sqlite")
    on_postgres = check_cot(question, sql, explanation, dialect="postgresql")
    assert on_sqlite.passed, on_sqlite.reasons
    assert on_postgres.passed and on_postgres.reasons == on_sqlite.reasons
