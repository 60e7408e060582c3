"""The income table the series and history repair tests query: twelve months of 2025,
revenue in Europe (two rows a month) and its cost, revenue in the USA, and one promotion
in Europe in March alone; on SQLite or a real PostgreSQL."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, text

from agents.analysis.models import Evidence
from kb.target.database import Database

INCOME_DDL = "CREATE TABLE income (period TEXT, region TEXT, item TEXT, amount {real})"


def income_rows() -> list[tuple]:
    rows: list[tuple] = [("202503", "EUR", "Promo", 7.0)]
    for month in range(1, 13):
        period = f"2025{month:02d}"
        rows += [
            (period, "EUR", "Revenue", 100.0 + 5 * month),
            (period, "EUR", "Revenue", 50.0 + month),
            (period, "EUR", "Cost", 80.0),
            (period, "USA", "Revenue", 999.0),
        ]
    return rows


def income_database(request: pytest.FixtureRequest, tmp_path, backend: str) -> Iterator[Database]:
    """The income table on ``backend`` (``sqlite`` or ``postgresql``), open, closed after."""
    if backend == "sqlite":
        path = tmp_path / "income.sqlite"
        with sqlite3.connect(path) as connection:
            connection.execute(INCOME_DDL.format(real="REAL"))
            connection.executemany("INSERT INTO income VALUES (?, ?, ?, ?)", income_rows())
        url = f"sqlite:///{path}"
    else:
        url = request.getfixturevalue("fresh_pg_database")
        engine = create_engine(url)
        with engine.begin() as connection:
            connection.execute(text(INCOME_DDL.format(real="DOUBLE PRECISION")))
            insert = text("INSERT INTO income VALUES (:p, :r, :i, :a)")
            rows = [dict(zip("pria", row, strict=True)) for row in income_rows()]
            connection.execute(insert, rows)
        engine.dispose()
    db = Database(url)
    yield db
    db.close()


def evidence_of(database: Database, item_id: str, sql: str) -> Evidence:
    """``sql`` run on ``database`` as a sub-answer's evidence."""
    ran = database.execute(sql)
    rows = [list(r) for r in ran.rows]
    return Evidence(id=item_id, question=item_id, sql=sql, columns=ran.columns, rows=rows,
                    row_count=ran.row_count)  # fmt: skip
