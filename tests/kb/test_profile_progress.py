"""Progress and stopping while profiling: reports per column and per describer call, and a
stop raised from the progress callback ends the run within one describer call, before any
write."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kb.profile.profiler import (
    ColumnProfile,
    Description,
    ProfileOptions,
    StopProfiling,
    TableProfile,
    profile_database,
)
from kb.store import KnowledgeStore
from kb.target.database import Database

TABLES = ("alpha", "beta", "delta", "gamma")  # in the order they are profiled
QUIET = ProfileOptions(progress=False)


class SlowDescriber:
    """A describer whose every call takes ``delay`` seconds, like a (fast) LLM call."""

    def __init__(self, delay: float = 0.2) -> None:
        self.delay, self.calls = delay, 0
        self.called = threading.Event()

    def _call(self) -> None:
        self.calls += 1
        self.called.set()
        time.sleep(self.delay)

    def describe_table(self, table: TableProfile) -> Description:
        self._call()
        return Description(f"table {table.name}")

    def describe_column(self, table: TableProfile, column: ColumnProfile) -> Description:
        self._call()
        return Description(f"column {column.name}")

    def describe_enum(self, table: TableProfile, column: ColumnProfile, value: Any) -> Description:
        self._call()
        return Description(f"value {value}")


@pytest.fixture()
def several_tables(tmp_path: Path) -> str:
    path = tmp_path / "several.sqlite"
    with sqlite3.connect(path) as conn:
        for name in TABLES:
            conn.execute(f"CREATE TABLE {name} (id INTEGER PRIMARY KEY, kind TEXT, amount REAL)")
            rows = [(i, ("a", "b")[i % 2], i * 1.5) for i in range(40)]
            conn.executemany(f"INSERT INTO {name} VALUES (?, ?, ?)", rows)
    return f"sqlite:///{path}"


def _profile(url: str, store: KnowledgeStore, describer: Any, progress: Any) -> Any:
    with Database(url) as database:
        return profile_database(
            database,
            store,
            database_name="several",
            describer=describer,
            options=QUIET,
            progress=progress,
        )


def test_progress_moves_per_column_and_per_describer_call(several_tables, sqlite_store):
    reports: list[tuple[float, str]] = []
    describer = SlowDescriber(delay=0.01)
    report = _profile(several_tables, sqlite_store, describer, lambda f, m: reports.append((f, m)))
    assert report.added and describer.calls > 0
    fractions = [f for f, _ in reports]
    assert fractions == sorted(fractions) and fractions[0] >= 0 and fractions[-1] <= 1
    assert len(reports) > 2 * len(TABLES)  # more than once per table in each phase
    messages = [m for _, m in reports]
    assert "profiled column 2/3 of beta (2/4 tables)" in messages
    assert "describing columns of gamma (4/4 tables)" in messages
    assert "describing the table of alpha (1/4 tables)" in messages
    assert "describing values of kind of delta (3/4 tables)" in messages
    # one report before each describer call
    assert sum(m.startswith("describing") for m in messages) == describer.calls


def test_the_same_entries_are_written_with_or_without_a_progress_callback(several_tables, tmp_path):
    written = []
    for name, progress in (("a", None), ("b", lambda f, m: None)):
        with KnowledgeStore(f"sqlite:///{tmp_path / name}.db") as store:
            _profile(several_tables, store, SlowDescriber(delay=0), progress)
            written.append(
                sorted((e.id, e.description, tuple(e.synonyms)) for e in store.iterate())
            )
    assert written[0] == written[1] and written[0]


def test_a_stop_from_the_progress_callback_ends_profiling_within_one_call(
    several_tables, sqlite_store
):
    describer = SlowDescriber(delay=0.2)
    cancel = threading.Event()
    calls_at_cancel: list[int] = []

    def progress(_fraction: float, _message: str) -> None:
        if cancel.is_set():
            raise StopProfiling("cancelled")

    def cancel_soon() -> None:
        describer.called.wait(10)
        calls_at_cancel.append(describer.calls)
        cancel.set()

    threading.Thread(target=cancel_soon, daemon=True).start()
    started = time.monotonic()
    with pytest.raises(StopProfiling):
        _profile(several_tables, sqlite_store, describer, progress)
    assert time.monotonic() - started < 2.0
    assert describer.calls <= calls_at_cancel[0] + 1  # at most the call under way finishes
    assert sqlite_store.count(active=None) == 0  # nothing written
