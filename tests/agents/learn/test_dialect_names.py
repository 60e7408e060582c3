"""Experiences store their target's SQLAlchemy backend name ("postgresql", "mssql"); the
learning code reads their SQL in sqlglot's dialect of that name ("postgres", "tsql")."""

from __future__ import annotations

import pytest

from agents.learn.cot.sql_parts import read_sql
from agents.learn.mine.sql_facts import sql_facts
from agents.learn.synth.variants import parse, sql_key

SQL = "SELECT name FROM singer WHERE country = 'France' AND age > 30"


@pytest.mark.parametrize("dialect", ["postgresql", "mssql", "sqlite", "postgres"])
def test_backend_names_are_read_in_their_sqlglot_dialect(dialect):
    facts = sql_facts(SQL, dialect)
    assert facts.tables == ["singer"]
    assert read_sql(SQL, dialect) is not None
    assert parse(SQL, dialect) is not None
    assert sql_key(SQL, dialect) == sql_key(SQL.lower().replace("france", "France"), dialect)
