"""Read-only engines for target databases, and the low-level limited executor.

This is the defence in depth under the SQL guard (``kb.target.sql_guard``): even SQL that never went
through the guard cannot write through these engines.

- **SQLite** is opened with the URI ``file:...?mode=ro``, then ``PRAGMA query_only=ON`` and
  ``trusted_schema=OFF``, no attached databases allowed (``SQLITE_LIMIT_ATTACHED`` = 0), and an
  authorizer that permits only reads, read-only pragmas and functions without side effects.
  The time limit is a progress handler that interrupts the statement after the deadline.
- **PostgreSQL** sessions start with ``default_transaction_read_only = on``; every query runs in
  its own transaction opened with ``SET TRANSACTION READ ONLY`` and
  ``SET LOCAL statement_timeout``, through a server-side cursor, and is always rolled back.

``run_limited`` does not check the SQL; ``kb.target.database.Database.execute`` does that first.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import QueuePool

from kb.target.sql_guard import FORBIDDEN_FUNCTION_PREFIXES, FORBIDDEN_FUNCTIONS

SUPPORTED_BACKENDS = ("sqlite", "postgresql")
PROGRESS_STEPS = 1_000  # SQLite VM instructions between two deadline checks
PG_QUERY_CANCELED = "57014"  # SQLSTATE of statement_timeout (and of cancel requests)

# Pragmas the SQLAlchemy inspector and profiling read; any other pragma is denied.
READ_PRAGMAS = frozenset(
    {"table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo",
     "foreign_key_list", "database_list", "collation_list", "read_uncommitted"}
)  # fmt: skip
_TABLE_PRAGMAS = READ_PRAGMAS - {"database_list", "collation_list", "read_uncommitted"}
_Fetched = tuple[list[str], list[tuple[Any, ...]], bool]  # columns, rows, truncated
_ALLOWED_ACTIONS = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE,
     sqlite3.SQLITE_TRANSACTION}
)  # fmt: skip


class QueryTimeoutError(TimeoutError):
    """A query ran past its time limit and was cancelled."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        super().__init__(f"the query ran past its time limit of {timeout_s:g} s and was cancelled")


class TargetConnectionError(ConnectionError):
    """The target database cannot be reached or opened."""


class QueryFailedError(RuntimeError):
    """The database rejected or failed the statement; the message is the database's."""


def create_readonly_engine(url: str, *, connect_timeout_s: float = 10.0) -> Engine:
    """A pooled, read-only SQLAlchemy engine for a SQLite file or a PostgreSQL database.

    Nothing is opened until the first use, so a dead database shows up then.

    Args:
        url: SQLAlchemy URL (``sqlite:///path/to/file.db``, ``postgresql://user@host/db``).
        connect_timeout_s: how long a PostgreSQL connection attempt may take.

    Raises:
        ValueError: for another backend, or an in-memory SQLite database.
    """
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return _sqlite_engine(parsed)
    if backend == "postgresql":
        return _postgres_engine(parsed, connect_timeout_s)
    raise ValueError(f"unsupported target database {backend!r}; use one of {SUPPORTED_BACKENDS}")


def _sqlite_engine(url: URL) -> Engine:
    if url.database in (None, "", ":memory:"):
        raise ValueError("a target SQLite database must be a file, not an in-memory database")
    path = Path(url.database).expanduser().resolve()
    return create_engine(
        "sqlite://", creator=lambda: connect_sqlite_readonly(path), poolclass=QueuePool
    )


def connect_sqlite_readonly(path: str | Path) -> sqlite3.Connection:
    """Open a SQLite file with every read-only layer on (usable from any thread).

    Raises:
        TargetConnectionError: when the file does not exist or cannot be opened.
    """
    path = Path(path)
    if not path.is_file():
        raise TargetConnectionError(f"SQLite database file not found: {path}")
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, check_same_thread=False)
        conn.execute("PRAGMA query_only=ON")
        conn.execute("PRAGMA trusted_schema=OFF")
    except sqlite3.Error as exc:
        raise TargetConnectionError(f"cannot open SQLite database {path}: {exc}") from exc
    conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    conn.set_authorizer(_sqlite_authorizer)
    return conn


def _sqlite_authorizer(action: int, arg1: str | None, arg2: str | None, *_: Any) -> int:
    if action in _ALLOWED_ACTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_FUNCTION:
        name = (arg2 or "").lower()
        forbidden = name in FORBIDDEN_FUNCTIONS or name.startswith(FORBIDDEN_FUNCTION_PREFIXES)
        return sqlite3.SQLITE_DENY if forbidden else sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA:
        name = (arg1 or "").lower()
        reading = arg2 is None or name in _TABLE_PRAGMAS
        return sqlite3.SQLITE_OK if name in READ_PRAGMAS and reading else sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_DENY


def _postgres_engine(url: URL, connect_timeout_s: float) -> Engine:
    if url.drivername == "postgresql":
        url = url.set(drivername="postgresql+psycopg")
    engine = create_engine(
        url,
        pool_pre_ping=True,
        connect_args={"connect_timeout": max(1, round(connect_timeout_s))},
    )
    event.listen(engine, "connect", _postgres_session_read_only)
    return engine


def _postgres_session_read_only(dbapi_connection: Any, _record: Any) -> None:
    autocommit = dbapi_connection.autocommit
    dbapi_connection.autocommit = True
    with dbapi_connection.cursor() as cursor:
        cursor.execute("SET SESSION default_transaction_read_only = on")
    dbapi_connection.autocommit = autocommit


def run_limited(engine: Engine, sql: str, *, max_rows: int, timeout_s: float) -> _Fetched:
    """Run ``sql`` as is (no guard) read-only, with a time limit and a row cap.

    Runs on the driver's own cursor, so the text goes to the database untouched (no
    placeholder processing of ``%`` or ``:name``). On PostgreSQL it runs as a server-side
    cursor over the extended protocol, which also refuses more than one statement.

    Args:
        engine: an engine from ``create_readonly_engine``.
        sql: one statement, already checked by the caller.
        max_rows: at most this many rows are returned; one more is fetched to detect more.
        timeout_s: wall-clock limit for running the statement and fetching its rows.

    Returns:
        ``(columns, rows, truncated)``; ``truncated`` is True when more rows existed.

    Raises:
        QueryTimeoutError: the time limit cut the query off.
        TargetConnectionError: the database could not be reached, or the connection broke.
        QueryFailedError: the database rejected the statement.
    """
    run = _run_sqlite if engine.dialect.name == "sqlite" else _run_postgres
    dbapi_error = engine.dialect.loaded_dbapi.Error
    with connect(engine) as conn:
        raw = conn.connection.dbapi_connection
        try:
            return run(raw, sql, max_rows, timeout_s)
        except dbapi_error as exc:
            message = _first_line(exc)
            if _is_broken(raw):
                conn.invalidate()
                raise TargetConnectionError(f"lost the connection: {message}") from exc
            raise QueryFailedError(message) from exc
        finally:
            _end_transaction(conn, raw, dbapi_error)


def connect(engine: Engine) -> Connection:
    """A connection from ``engine``.

    Raises:
        TargetConnectionError: the database cannot be reached or opened; the message names it.
    """
    try:
        return engine.connect()
    except TargetConnectionError:
        raise
    except DBAPIError as exc:
        where = engine.url.render_as_string(hide_password=True)
        raise TargetConnectionError(f"cannot connect to {where}: {_first_line(exc)}") from exc


def _run_sqlite(raw: Any, sql: str, max_rows: int, timeout_s: float) -> _Fetched:
    deadline = time.monotonic() + timeout_s
    expired = False

    def past_deadline() -> int:
        nonlocal expired
        expired = expired or time.monotonic() > deadline
        return int(expired)

    raw.set_progress_handler(past_deadline, PROGRESS_STEPS)
    cursor = raw.cursor()
    try:
        cursor.execute(sql)
        return _fetch(cursor, max_rows)
    except sqlite3.OperationalError as exc:
        if expired:
            raise QueryTimeoutError(timeout_s) from exc
        raise
    finally:
        cursor.close()
        raw.set_progress_handler(None, 0)


def _run_postgres(raw: Any, sql: str, max_rows: int, timeout_s: float) -> _Fetched:
    with raw.cursor() as setup:
        setup.execute("SET TRANSACTION READ ONLY")
        setup.execute(f"SET LOCAL statement_timeout = {max(1, round(timeout_s * 1000))}")
    try:
        with raw.cursor(name="almanac_query") as cursor:
            cursor.execute(sql)
            return _fetch(cursor, max_rows)
    except Exception as exc:  # psycopg's errors; the caller classifies the rest
        if getattr(exc, "sqlstate", None) == PG_QUERY_CANCELED:
            raise QueryTimeoutError(timeout_s) from exc
        raise


def _fetch(cursor: Any, max_rows: int) -> _Fetched:
    if cursor.description is None:
        return [], [], False
    columns = [str(item[0]) for item in cursor.description]
    rows = [tuple(row) for row in cursor.fetchmany(max_rows + 1)]
    return columns, rows[:max_rows], len(rows) > max_rows


def _end_transaction(conn: Connection, raw: Any, dbapi_error: type[Exception]) -> None:
    """Roll back (nothing was written); a connection that cannot is dropped from the pool."""
    if conn.invalidated:
        return
    try:
        raw.rollback()
    except dbapi_error:
        conn.invalidate()


def _is_broken(raw: Any) -> bool:
    return bool(getattr(raw, "closed", False) or getattr(raw, "broken", False))


def _first_line(exc: BaseException) -> str:
    lines = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
