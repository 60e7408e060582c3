"""Attacks on a real SQLite database file: each is refused or cut off, and the file never changes.

The first group goes through ``Database.execute`` (guard + read-only connection + time limit).
The second bypasses the guard and shows that the connection itself refuses writes, layer by
layer (defence in depth).
"""

import hashlib
import shutil
import sqlite3
from pathlib import Path

import pytest

from bench.datasets.registry import default_data_root
from kb.target.database import Database
from kb.target.readonly import (
    QueryFailedError,
    QueryTimeoutError,
    connect_sqlite_readonly,
    run_limited,
)

SPIDER = default_data_root() / "spider_dev/database/concert_singer/concert_singer.sqlite"
CROSS_JOIN_12 = "SELECT count(*) FROM " + ", ".join(f"singer s{i}" for i in range(12))

ATTACKS = [
    ("DROP TABLE singer", "refused"),
    ("DELETE FROM singer", "refused"),
    ("UPDATE singer SET Name = 'pwned'", "refused"),
    ("INSERT INTO singer (Singer_ID, Name) VALUES (99, 'pwned')", "refused"),
    ("REPLACE INTO singer (Singer_ID, Name) VALUES (1, 'pwned')", "refused"),
    ("CREATE TABLE pwned (a)", "refused"),
    ("ALTER TABLE singer RENAME TO pwned", "refused"),
    ("PRAGMA writable_schema=ON", "refused"),
    ("PRAGMA query_only=OFF", "refused"),
    ("PRAGMA journal_mode=DELETE", "refused"),
    ("VACUUM", "refused"),
    ("SELECT load_extension('/tmp/evil.so')", "refused"),
    ("SELECT 1; DROP TABLE singer", "refused"),
    ("SELECT 1; -- harmless?\nDROP TABLE singer", "refused"),
    ("SELECT 1 /* */; DELETE FROM singer", "refused"),
    ("SELECT 1 -- */; DELETE FROM singer", None),  # all comment after SELECT 1: runs SELECT 1
    ("WITH gone AS (DELETE FROM singer RETURNING *) SELECT count(*) FROM gone", "refused"),
    (
        "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT max(n) FROM c",
        "timeout",
    ),
    (CROSS_JOIN_12, "timeout"),
]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture()
def victim(tmp_path) -> Path:
    if not SPIDER.is_file():
        pytest.fail(f"Spider database not found at {SPIDER}; set ALMANAC_BENCH_DATA")
    copy = tmp_path / "concert_singer.sqlite"
    shutil.copyfile(SPIDER, copy)
    return copy


@pytest.mark.parametrize(("sql", "outcome"), ATTACKS)
def test_an_attack_is_refused_or_cut_off_and_the_file_is_unchanged(victim, sql, outcome):
    before = _sha256(victim)
    with Database(f"sqlite:///{victim}", timeout_s=1.0) as db:
        res = db.execute(sql)
        assert res.error_kind == outcome, res.error
        assert res.elapsed < 5
        assert db.execute("SELECT count(*) FROM singer").rows == [(6,)]
    assert _sha256(victim) == before
    assert sorted(p.name for p in victim.parent.iterdir()) == ["concert_singer.sqlite"]


def test_attaching_a_new_file_to_write_into_it_creates_nothing(victim, tmp_path):
    target = tmp_path / "exfiltrated.db"
    before = _sha256(victim)
    with Database(f"sqlite:///{victim}", timeout_s=1.0) as db:
        res = db.execute(f"ATTACH DATABASE '{target}' AS loot")
        assert res.error_kind == "refused" and "ATTACH" in res.error
        smuggled = db.execute(f"SELECT 1; ATTACH DATABASE '{target}' AS loot")
        assert smuggled.error_kind == "refused"
    assert not target.exists()
    assert _sha256(victim) == before


def test_attach_bypassing_the_guard_is_refused_by_the_connection(victim, tmp_path):
    target = tmp_path / "exfiltrated.db"
    before = _sha256(victim)
    with Database(f"sqlite:///{victim}") as db:
        for attach in (
            f"ATTACH DATABASE '{target}' AS loot",
            f"ATTACH 'file:{target}?mode=rwc' AS x",
        ):
            with pytest.raises(QueryFailedError, match="not authorized"):
                run_limited(db.engine, attach, max_rows=1, timeout_s=1)
    assert not target.exists()
    assert _sha256(victim) == before


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM singer",
        "DROP TABLE singer",
        "UPDATE singer SET Name = 'pwned'",
        "PRAGMA writable_schema=ON",
        "PRAGMA query_only=OFF",
        "CREATE TEMP TABLE scratch (a)",
        "SELECT load_extension('/tmp/evil.so')",
    ],
)
def test_writes_bypassing_the_guard_are_refused_by_the_connection(victim, sql):
    before = _sha256(victim)
    with Database(f"sqlite:///{victim}") as db:
        with pytest.raises(QueryFailedError, match="not authorized"):
            run_limited(db.engine, sql, max_rows=1, timeout_s=1)
        with db.engine.connect() as conn, pytest.raises(Exception, match="not authorized"):
            conn.exec_driver_sql(sql)
    assert _sha256(victim) == before


def test_a_second_statement_bypassing_the_guard_is_refused_by_the_driver(victim):
    before = _sha256(victim)
    with (
        Database(f"sqlite:///{victim}") as db,
        pytest.raises(QueryFailedError, match="one statement"),
    ):
        run_limited(db.engine, "SELECT 1; DROP TABLE singer", max_rows=1, timeout_s=1)
    assert _sha256(victim) == before


def test_each_connection_layer_refuses_writes_on_its_own(victim):
    """Without the authorizer, query_only refuses; with query_only off too, mode=ro refuses."""
    before = _sha256(victim)
    conn = connect_sqlite_readonly(victim)
    try:
        conn.set_authorizer(None)
        assert conn.execute("PRAGMA query_only").fetchone() == (1,)
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            conn.execute("DELETE FROM singer")
        conn.execute("PRAGMA query_only=OFF")
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            conn.execute("DELETE FROM singer")  # the file itself is open read-only
        with pytest.raises(sqlite3.OperationalError, match="too many attached"):
            conn.execute(f"ATTACH DATABASE '{victim.parent / 'x.db'}' AS x")
        with pytest.raises(sqlite3.OperationalError):
            conn.execute("SELECT load_extension('/tmp/evil.so')")  # loading is off
    finally:
        conn.close()
    assert _sha256(victim) == before
    assert sorted(p.name for p in victim.parent.iterdir()) == ["concert_singer.sqlite"]


def test_a_runaway_cross_join_bypassing_the_guard_still_hits_the_time_limit(victim):
    with Database(f"sqlite:///{victim}") as db, pytest.raises(QueryTimeoutError):
        run_limited(db.engine, CROSS_JOIN_12, max_rows=10, timeout_s=0.5)
