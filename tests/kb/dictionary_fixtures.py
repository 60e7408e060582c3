"""A school-finance database with opaquely named columns, and data dictionaries about it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from kb.profile.profiler import ProfileOptions, profile_database
from kb.store import KnowledgeStore
from kb.target.database import Database

FINANCE = "school_finance"
TITLE_1 = "Title 1 (no child left behind act)"
CSV = f"""Table_Name,Field,Definition,Aliases
finrev_fed_17,c14,{TITLE_1},title one funding;NCLB money
finrev_fed_17,c15,Children with disabilities,IDEA funds
finrev_fed_17,,Federal revenue of each school district in 2017,
finrev_fed_17,t_fed_rev,Total federal revenue,
finrev_fed_17,c99,A column that is not there,
"""


def build_finance(path: Path) -> None:
    """One table whose revenue columns are named by codes (as in the Census file)."""
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE finrev_fed_17 (state_code INTEGER, school_district TEXT,"
            " c14 INTEGER, c15 INTEGER, t_fed_rev INTEGER)"
        )
        conn.executemany(
            "INSERT INTO finrev_fed_17 VALUES (?, ?, ?, ?, ?)",
            [(n % 5, f"District {n}", n * 1000, n * 300, n * 5000) for n in range(1, 41)],
        )


def profiled_finance(folder: Path, store: KnowledgeStore) -> Path:
    """Build the database in ``folder`` and profile it into ``store`` as ``school_finance``."""
    path = folder / "finance.sqlite"
    build_finance(path)
    with Database(f"sqlite:///{path}") as database:
        profile_database(
            database, store, database_name=FINANCE, options=ProfileOptions(progress=False)
        )
    return path
