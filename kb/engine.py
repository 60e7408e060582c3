"""SQLAlchemy engines for the knowledge store.

SQLite runs in WAL mode with a busy timeout, foreign keys on, and write transactions opened
with ``BEGIN IMMEDIATE`` so that concurrent writers queue for the lock instead of failing on a
lock upgrade. Read transactions use a plain deferred ``BEGIN`` and never block writers.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.pool import StaticPool

from kb.private_files import private_file

WRITE_OPTION = "almanac_write"
BUSY_TIMEOUT_MS = 60_000
CACHE_KIB = 65_536  # page cache per connection: index maintenance stays in memory


def create_store_engine(url: str, *, echo: bool = False) -> Engine:
    """An engine for ``url``; creates a SQLite file 0600 in a 0700 folder when it is missing
    (it holds key hashes and the audit log: :mod:`kb.private_files`)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return create_engine(url, echo=echo, pool_pre_ping=True, future=True)
    kwargs: dict[str, Any] = {"echo": echo}
    if parsed.database in (None, "", ":memory:"):
        kwargs.update(poolclass=StaticPool, connect_args={"check_same_thread": False})
    else:
        private_file(Path(parsed.database).expanduser())
        kwargs.update(connect_args={"timeout": BUSY_TIMEOUT_MS / 1000})
    engine = create_engine(url, **kwargs)
    event.listen(engine, "connect", _configure_sqlite)
    event.listen(engine, "begin", _begin_sqlite)
    return engine


def _configure_sqlite(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    _enable_wal(cursor)
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
    cursor.execute("PRAGMA wal_autocheckpoint=16384")  # pages; fewer, larger checkpoints
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _enable_wal(cursor: Any) -> None:
    """Switch to WAL; the switch skips the busy handler, so retry while another opener holds it."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _begin_sqlite(conn: Connection) -> None:
    mode = "IMMEDIATE" if conn.get_execution_options().get(WRITE_OPTION) else "DEFERRED"
    conn.exec_driver_sql(f"BEGIN {mode}")


@contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """One write transaction (serialised against other writers on SQLite)."""
    with engine.connect() as conn:
        conn.execution_options(**{WRITE_OPTION: True})
        with conn.begin():
            yield conn


@contextmanager
def read_transaction(engine: Engine) -> Iterator[Connection]:
    with engine.connect() as conn, conn.begin():
        yield conn
