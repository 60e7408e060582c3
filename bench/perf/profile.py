"""Column-profiling speed.

    python -m bench.perf.profile [--rows 40000] [--columns 70] [--seed 0] [--data-root PATH]

Prints the time to profile every Spider dev database (into a fresh SQLite store), then the
time to profile one generated wide table (``--rows`` × ``--columns``, seeded): an integer key
and a mix of numeric, categorical, free-text, temporal (ISO and non-ISO strings) and code
columns, in a SQLite file. Both runs use the default ``ProfileOptions`` (20,000-row sample).

Last, the latency of the agent tool ``Toolkit.fuzzy_enum`` over ``--enum-values`` stored enum
values (pseudo-word pairs, 1,000 per column; spelling match, no embedder): p50 and p99 of
queries that misspell a stored value, how often that value ranks first, and the time of the
first call (which builds the index).
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agents.tools.toolkit import Toolkit
from bench.datasets.registry import default_data_root
from bench.perf.store import vocabulary
from indices.embeddings import Embedder, MiniLMEmbedder
from indices.fuzzy_schema import SchemaIndices
from kb.profile.profiler import ProfileOptions, profile_database
from kb.store import KnowledgeStore
from kb.target.database import Database
from ukf import BaseUKF, ColumnUKF, EnumUKF, TableUKF

WORDS = (
    *("north", "south", "east", "west", "central", "harbour", "valley", "ridge", "river"),
    *("forest", "meadow", "summit", "coast", "plain", "desert", "island", "canyon", "delta"),
)
START = dt.datetime(2015, 1, 1)
Generator = Callable[[random.Random, int], Any]


def _sentence(rng: random.Random, _i: int) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(8, 16))).capitalize() + "."


def _moment(rng: random.Random) -> dt.datetime:
    return START + dt.timedelta(minutes=rng.randrange(0, 9 * 365 * 24 * 60))


KINDS: tuple[tuple[str, str, Generator], ...] = (
    ("amount", "REAL", lambda rng, _i: round(rng.lognormvariate(5, 1.2), 2)),
    ("quantity", "INTEGER", lambda rng, _i: rng.randint(0, 500)),
    ("region", "TEXT", lambda rng, _i: rng.choice(WORDS[:8])),
    ("segment", "TEXT", lambda rng, _i: f"segment {rng.randint(1, 60)}"),
    ("note", "TEXT", _sentence),
    ("day", "TEXT", lambda rng, _i: _moment(rng).strftime("%d/%m/%Y")),
    ("stamp", "TEXT", lambda rng, _i: _moment(rng).strftime("%Y-%m-%d %H:%M:%S")),
    ("booked", "TEXT", lambda rng, _i: _moment(rng).strftime("%d.%m.%Y %H:%M")),
    ("code", "TEXT", lambda _rng, i: f"C-{i:07d}"),
    ("score", "REAL", lambda rng, _i: None if rng.random() < 0.1 else rng.gauss(50, 15)),
)


def make_wide_table(path: Path, rows: int, columns: int, seed: int) -> None:
    """Write table ``wide`` with ``rows`` rows and ``columns`` columns (the first is the key)."""
    rng = random.Random(seed)
    kinds = [KINDS[i % len(KINDS)] for i in range(columns - 1)]
    names = [f"{kind[0]}_{i}" for i, kind in enumerate(kinds)]
    ddl = ", ".join(f'"{n}" {kind[1]}' for n, kind in zip(names, kinds, strict=True))
    with sqlite3.connect(path) as conn:
        conn.execute(f"CREATE TABLE wide (row_id INTEGER PRIMARY KEY, {ddl})")
        marks = ", ".join("?" * columns)
        data = [(i, *(kind[2](rng, i) for kind in kinds)) for i in range(1, rows + 1)]
        conn.executemany(f"INSERT INTO wide VALUES ({marks})", data)
    conn.close()


def time_profile(url: str, store: KnowledgeStore, name: str) -> tuple[float, int]:
    """Seconds to profile ``url`` into ``store``, and the number of columns profiled."""
    options = ProfileOptions(progress=False)
    started = time.perf_counter()
    with Database(url, timeout_s=60) as database:
        report = profile_database(database, store, database_name=name, options=options)
    return time.perf_counter() - started, report.profile.column_count


def make_enums(store: KnowledgeStore, n: int, rng: random.Random) -> list[str]:
    """Store ``n`` distinct enum values (1,000 per column) of database ``fuzzy``."""
    words = vocabulary(rng)
    values: dict[str, None] = {}
    while len(values) < n:
        values[" ".join(rng.sample(words, 2))] = None
    table = TableUKF.create("fuzzy", "catalog", creator="bench")
    entries: list[BaseUKF] = [table]
    column: ColumnUKF | None = None
    for i, value in enumerate(values):
        if i % 1000 == 0:
            column = ColumnUKF.create(table, f"attribute_{i // 1000}", semantic_type="categorical")
            entries.append(column)
        assert column is not None
        entries.append(EnumUKF.create(column, value, count=rng.randint(1, 500)))
    store.upsert_many(entries)
    return list(values)


def misspell(value: str, rng: random.Random) -> str:
    """``value`` with two neighbouring letters swapped."""
    i = rng.randrange(len(value) - 1)
    return value[:i] + value[i + 1] + value[i] + value[i + 2 :]


def fuzzy_enum_latency(
    store: KnowledgeStore, n: int, queries: int, seed: int, embedder: Embedder | None = None
) -> tuple[float, float, float, float]:
    """``(first call s, p50 ms, p99 ms, share found first)`` of ``Toolkit.fuzzy_enum``.

    With an ``embedder`` the first call waits until every value is embedded.
    """
    rng = random.Random(seed)
    values = make_enums(store, n, rng)
    indices = SchemaIndices(store, database="fuzzy", embedder=embedder, sync_embed_limit=None)
    kit = Toolkit(store, database_name="fuzzy", indices=indices)
    started = time.perf_counter()
    kit.fuzzy_enum("warm up")
    first = time.perf_counter() - started
    latencies, found = [], 0
    for value in rng.sample(values, queries):
        started = time.perf_counter()
        result = kit.fuzzy_enum(misspell(value, rng))
        latencies.append(time.perf_counter() - started)
        matches = result.get("matches") or [{}]
        found += matches[0].get("value") == value
    latencies.sort()
    p50, p99 = latencies[len(latencies) // 2], latencies[int(len(latencies) * 0.99)]
    return first, 1000 * p50, 1000 * p99, found / queries


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark and print one line per measurement."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=40_000)
    parser.add_argument("--columns", type=int, default=70)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-root", type=Path, default=None)
    parser.add_argument("--enum-values", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--embed",
        action="store_true",
        help="also measure fuzzy_enum fused with MiniLM embeddings (embedding "
        "100k values takes minutes on 2 cores)",
    )
    args = parser.parse_args(argv)
    spider = (args.data_root or default_data_root()) / "spider_dev" / "database"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        with KnowledgeStore(f"sqlite:///{folder / 'knowledge.db'}") as store:
            databases = sorted(p for p in spider.iterdir() if p.is_dir())
            total, columns = 0.0, 0
            for db in databases:
                elapsed, count = time_profile(
                    f"sqlite:///{db / (db.name + '.sqlite')}", store, db.name
                )
                total, columns = total + elapsed, columns + count
            print(
                f"spider dev        {total:6.2f} s  ({len(databases)} databases, "
                f"{columns} columns, {store.count()} entries)"
            )
            wide = folder / "wide.sqlite"
            make_wide_table(wide, args.rows, args.columns, args.seed)
            elapsed, count = time_profile(f"sqlite:///{wide}", store, "wide")
            print(f"wide table        {elapsed:6.2f} s  ({args.rows:,} rows x {count} columns)")
        with KnowledgeStore(f"sqlite:///{folder / 'enums.db'}") as store:
            first, p50, p99, hits = fuzzy_enum_latency(
                store, args.enum_values, args.queries, args.seed
            )
            print(
                f"fuzzy_enum   p50 {p50:6.2f} ms  p99 {p99:6.2f} ms  ({args.enum_values:,} values, "
                f"{args.queries} misspelled queries, {hits:.0%} found first; "
                f"first call {first:.1f} s builds the index; spelling only)"
            )
        if args.embed:
            with KnowledgeStore(f"sqlite:///{folder / 'embedded.db'}") as store:
                first, p50, p99, hits = fuzzy_enum_latency(
                    store, args.enum_values, args.queries, args.seed, MiniLMEmbedder()
                )
                print(
                    f"fuzzy_enum   p50 {p50:6.2f} ms  p99 {p99:6.2f} ms  (same, fused with "
                    f"MiniLM; {hits:.0%} found first; first call {first:.1f} s embeds them)"
                )


if __name__ == "__main__":
    main()
