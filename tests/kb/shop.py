"""A small shop database with a column of every semantic type, and helpers to profile it."""

from __future__ import annotations

import datetime as dt
import random
import sqlite3
from pathlib import Path
from typing import Any

from kb.profile.profiler import ProfileOptions, profile_database, profile_schema
from kb.store import KnowledgeStore
from kb.target.database import Database
from ukf import ColumnUKF

QUIET = ProfileOptions(progress=False)
REGIONS = ("North", "South", "East", "West", "North-East")
WORDS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa", "sigma")
START = dt.date(2020, 1, 1)


def _bio(rng: random.Random) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(10, 16))).capitalize() + "."


def build_shop(path: Path, customers: int = 200, orders: int = 1000) -> None:
    """Customers and orders with one column of every semantic type."""
    rng = random.Random(7)
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, region TEXT, bio TEXT,"
            " signup TEXT, balance REAL, vip INTEGER, notes TEXT, qty INTEGER)"
        )
        conn.execute(
            "CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer_id INTEGER"
            " REFERENCES customers(customer_id), ordered_at TEXT, amount REAL, status TEXT)"
        )
        conn.executemany(
            "INSERT INTO customers VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    i,
                    REGIONS[i % len(REGIONS)],
                    _bio(rng),
                    (START + dt.timedelta(days=7 * i)).strftime("%d/%m/%Y"),
                    round(rng.uniform(0, 5000), 2),
                    int(i % 10 == 0),
                    rng.choice(("call back", "no contact", None)),
                    rng.randint(1, 40),
                )
                for i in range(1, customers + 1)
            ],
        )
        conn.executemany(
            "INSERT INTO orders VALUES (?, ?, ?, ?, ?)",
            [
                (
                    i,
                    rng.randint(1, customers),
                    f"2023-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} 10:00:00",
                    round(rng.uniform(5, 500), 2),
                    rng.choice(("open", "shipped", "returned")),
                )
                for i in range(1, orders + 1)
            ],
        )
    conn.close()


def run(path: Path, store: KnowledgeStore, **kwargs: Any):
    kwargs.setdefault("options", QUIET)
    with Database(f"sqlite:///{path}") as database:
        return profile_database(database, store, database_name="shop", **kwargs)


def schema(path: Path, options: ProfileOptions = QUIET):
    with Database(f"sqlite:///{path}") as database:
        return profile_schema(database, database_name="shop", options=options)


def sql(path: Path, query: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute(query).fetchall()
    conn.close()
    return rows


def column_entry(store: KnowledgeStore, table: str, column: str) -> ColumnUKF:
    found = store.search(type="column", tags={"TABLE": table, "COLUMN": column})
    assert len(found) == 1, found
    return found[0]  # type: ignore[return-value]


def enum_values(store: KnowledgeStore, table: str, column: str) -> set[Any]:
    entries = store.iterate(type="enum", tags={"TABLE": table, "COLUMN": column})
    return {e.content_resources["value"] for e in entries}
