"""The income table the drivers' tests query, on SQLite and on a real PostgreSQL: in FY2025
Q2 the cost of AU5 in EUR jumps (its margin collapses) while every other segment keeps a 25 %
margin; caliber B rows (filtered out by the query) would hide it."""

from __future__ import annotations

import sqlite3

from sqlalchemy import create_engine, text

from agents.analysis.models import Evidence
from kb.target.database import Database

REGIONS = ["EUR", "NA", "APAC"]
MODELS = ["AU3", "AU5", "AU7"]
QUARTERS = [("FY2024", "Q1"), ("FY2024", "Q2"), ("FY2025", "Q1"), ("FY2025", "Q2")]
# what a small model writes for "Aurora's gross margin in FY2025 Q2"
MARGIN_SQL = (
    "SELECT (SUM(CASE WHEN item = 'Revenue' THEN amount ELSE 0 END) - "
    "SUM(CASE WHEN item = 'Cost' THEN amount ELSE 0 END)) / "
    "SUM(CASE WHEN item = 'Revenue' THEN amount ELSE 0 END) AS gross_margin "
    "FROM income AS T1 WHERE T1.fiscal_quarter = 'Q2' AND T1.fiscal_year = 'FY2025' "
    "AND caliber = 'A'"
)


COLUMNS = (
    "fiscal_year TEXT, fiscal_quarter TEXT, caliber TEXT, region_code TEXT, region_name TEXT, "
    "model_name TEXT, channel TEXT, customer_code TEXT, item TEXT, amount {real}, units INTEGER, "
    "period TEXT"
)


def _rows() -> list[tuple]:
    """Income by quarter, region, model and channel; in FY2025 Q2 the cost of AU5 in EUR
    jumps (its margin collapses) while every other segment keeps a 25 % margin. Caliber B
    rows (filtered out by the query) would hide it."""
    rows = []
    for year, quarter in QUARTERS:
        for r, region in enumerate(REGIONS):
            for model in MODELS:
                for channel in ("retail", "fleet"):
                    revenue = 100.0 + 10 * r
                    cost = revenue * 0.75
                    if (year, quarter, region, model) == ("FY2025", "Q2", "EUR", "AU5"):
                        cost = revenue * 1.1
                    for caliber, scale in (("A", 1.0), ("B", 3.0)):
                        common = (year, quarter, caliber, region, f"{region} name", model)
                        common += (channel, f"C{r}{channel}")
                        month = f"{int(year[2:]) - 1}{'07' if quarter == 'Q1' else '10'}"
                        rows.append((*common, "Revenue", revenue * scale, 5, month))
                        spent = cost if caliber == "A" else revenue * 0.75 * scale
                        rows.append((*common, "Cost", spent, 5, month))
    return rows


def income_tables(request, tmp_path):
    """The income table on the backend ``request.param`` names (a fixture's parameter):
    SQLite, or a new database on the test PostgreSQL; its :class:`Database` yielded."""
    if request.param == "sqlite":
        path = tmp_path / "income.sqlite"
        with sqlite3.connect(path) as connection:
            connection.execute(f"CREATE TABLE income ({COLUMNS.format(real='REAL')})")
            connection.executemany(f"INSERT INTO income VALUES ({', '.join('?' * 12)})", _rows())
        url = f"sqlite:///{path}"
    else:
        url = request.getfixturevalue("fresh_pg_database")
        engine = create_engine(url)
        with engine.begin() as connection:
            connection.execute(
                text(f"CREATE TABLE income ({COLUMNS.format(real='DOUBLE PRECISION')})")
            )
            names = [f"c{i}" for i in range(12)]
            insert = f"INSERT INTO income VALUES ({', '.join(':' + n for n in names)})"
            connection.execute(
                text(insert), [dict(zip(names, row, strict=True)) for row in _rows()]
            )
        engine.dispose()
    db = Database(url)
    yield db
    db.close()


def evidence_of(database: Database, sql: str, id: str = "q1") -> Evidence:
    ran = database.execute(sql)
    assert ran.ok, ran.error
    return Evidence(
        id=id,
        question="Aurora's gross margin in FY2025 Q2",
        sql=sql,
        columns=list(ran.columns),
        rows=[list(r) for r in ran.rows],
        row_count=ran.row_count,
    )
