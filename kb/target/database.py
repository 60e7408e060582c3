"""Read-only access to a target database (the one analysts ask questions about).

``Database(url)`` owns the connection pool, the reflected schema, and read-only execution:
every query is checked by the SQL guard (``kb.target.sql_guard``), the normalised statement
runs on a read-only connection (``kb.target.readonly``) under a time limit and a row cap, and
the outcome comes back as ``Results`` (``kb.target.results``) — never as an exception::

    db = Database("sqlite:///concert_singer.sqlite", timeout_s=5)
    db.tables()                      # ['concert', 'singer', 'singer_in_concert', 'stadium']
    db.table_info("concert").foreign_keys
    res = db.execute("SELECT name, age FROM singer ORDER BY age DESC")
    print(render_results(res))       # kb.target.results_render

One ``Database`` may be shared by many threads; each query borrows a pooled connection.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import Connection, Engine
from sqlalchemy.engine import make_url

from kb.target.readonly import (
    QueryFailedError,
    QueryTimeoutError,
    TargetConnectionError,
    connect,
    create_readonly_engine,
    run_limited,
)
from kb.target.reflection import (
    TableInfo,
    TableKind,
    UnknownTableError,
    reflect_tables,
    table_names,
)
from kb.target.results import ErrorKind, Results, jsonable_rows
from kb.target.sql_guard import UnsafeSQLError, check_read_only, sql_snippet

logger = logging.getLogger(__name__)
LOGGED_SQL_CHARS = 300  # how much of a refused query the log line shows
T = TypeVar("T")


class Database:
    """A target database reached through a SQLAlchemy URL, read-only.

    Args:
        url: ``sqlite:///path/to/file`` or ``postgresql[+psycopg]://user@host/db``.
        timeout_s: default time limit per query, in seconds.
        max_rows: default row cap per query.
        schema: schema to reflect (PostgreSQL); None for the default schema.

    Raises:
        ValueError: for an unsupported backend or non-positive limits. Nothing is connected
            until first use, so an unreachable database is reported by the first call.
    """

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = 10.0,
        max_rows: int = 10_000,
        schema: str | None = None,
    ) -> None:
        _check_limits(max_rows, timeout_s)
        self.timeout_s, self.max_rows, self.schema = timeout_s, max_rows, schema
        self._engine = create_readonly_engine(url, connect_timeout_s=timeout_s)
        self._url = make_url(url).render_as_string(hide_password=True)
        self._lock = threading.Lock()
        self._kinds: dict[str, TableKind] | None = None
        self._infos: dict[str, TableInfo] = {}
        self._complete = False

    @property
    def dialect(self) -> str:
        """SQLAlchemy backend name: ``"sqlite"`` or ``"postgresql"``."""
        return self._engine.dialect.name

    @property
    def url(self) -> str:
        """The database URL with any password hidden."""
        return self._url

    @property
    def engine(self) -> Engine:
        """The read-only engine, for profiling code that builds its own queries.

        Connections from it refuse writes, but queries sent through it skip the SQL guard and
        the limits of ``execute``.
        """
        return self._engine

    # ----------------------------------------------------------------- reflection

    def tables(self) -> list[str]:
        """Names of the tables and views, sorted.

        Raises:
            TargetConnectionError: the database cannot be reached.
        """
        return sorted(self._table_kinds())

    def table_info(self, name: str) -> TableInfo:
        """Columns, keys and comment of one table or view (cached).

        Raises:
            UnknownTableError: no such table (the message suggests close names).
            TargetConnectionError: the database cannot be reached.
        """
        kinds = self._table_kinds()
        if name not in kinds:
            folded = {k.lower(): k for k in kinds}
            if name.lower() not in folded:
                raise UnknownTableError(name, kinds)
            name = folded[name.lower()]
        with self._lock:
            if name in self._infos:
                return self._infos[name]
        info = self._reflect({name: kinds[name]})[name]
        with self._lock:
            return self._infos.setdefault(name, info)  # another thread may have been first

    def reflect(self) -> dict[str, TableInfo]:
        """Every table and view, by name in sorted order (cached until ``refresh``).

        Raises:
            TargetConnectionError: the database cannot be reached.
        """
        kinds = self._table_kinds()
        with self._lock:
            complete = self._complete
        if not complete:
            infos = self._reflect(kinds)
            with self._lock:
                for name, info in infos.items():
                    self._infos.setdefault(name, info)  # keep what callers already hold
                self._complete = True
        with self._lock:
            return {name: self._infos[name] for name in sorted(kinds) if name in self._infos}

    def refresh(self) -> None:
        """Forget the cached schema; the next reflection reads the database again."""
        with self._lock:
            self._kinds, self._infos, self._complete = None, {}, False

    def _table_kinds(self) -> dict[str, TableKind]:
        with self._lock:
            if self._kinds is not None:
                return self._kinds
        kinds = self._with_connection(lambda conn: table_names(conn, self.schema))
        with self._lock:
            self._kinds = kinds
        return kinds

    def _reflect(self, kinds: dict[str, TableKind]) -> dict[str, TableInfo]:
        return self._with_connection(lambda conn: reflect_tables(conn, kinds, self.schema))

    def _with_connection(self, work: Callable[[Connection], T]) -> T:
        with connect(self._engine) as conn:
            try:
                return work(conn)
            finally:
                conn.rollback()

    # ----------------------------------------------------------------- execution

    def execute(
        self, sql: str, *, max_rows: int | None = None, timeout_s: float | None = None
    ) -> Results:
        """Run one read-only query; never raises for bad SQL, refusal, timeout or a dead database.

        Args:
            sql: one SELECT / WITH ... SELECT / UNION-style query (comments allowed).
            max_rows: row cap for this call (default: the instance's ``max_rows``).
            timeout_s: time limit for this call (default: the instance's ``timeout_s``).

        Returns:
            ``Results`` with rows, or with ``error`` and ``error_kind`` set.

        Raises:
            ValueError: only for a non-positive ``max_rows`` or ``timeout_s``.
        """
        max_rows = self.max_rows if max_rows is None else max_rows
        timeout_s = self.timeout_s if timeout_s is None else timeout_s
        _check_limits(max_rows, timeout_s)
        started = time.perf_counter()
        try:
            statement = check_read_only(sql, self.dialect)
        except UnsafeSQLError as exc:
            logger.info(
                "refused query: %s; SQL: %s", exc.reason, sql_snippet(sql, LOGGED_SQL_CHARS)
            )
            return Results.failure("refused", str(exc), sql=sql, elapsed=_since(started))
        try:
            columns, rows, truncated = run_limited(
                self._engine, statement, max_rows=max_rows, timeout_s=timeout_s
            )
        except QueryTimeoutError as exc:
            logger.info("query cut off after %.1f s", timeout_s)
            return self._failure("timeout", str(exc), statement, started)
        except TargetConnectionError as exc:
            return self._failure("connection", str(exc), statement, started)
        except QueryFailedError as exc:
            return self._failure("sql", str(exc), statement, started)
        results = Results(
            columns=columns,
            rows=jsonable_rows(rows),
            truncated=truncated,
            elapsed=_since(started),
            sql=statement,
        )
        logger.debug("query returned %d rows in %.3f s", results.row_count, results.elapsed)
        return results

    def _failure(self, kind: ErrorKind, message: str, statement: str, started: float) -> Results:
        logger.debug("query failed (%s): %s", kind, message)
        text = f"{message}; SQL: {sql_snippet(statement)}"
        return Results.failure(kind, text, sql=statement, elapsed=_since(started))

    # ----------------------------------------------------------------- lifecycle

    def close(self) -> None:
        """Close every pooled connection."""
        self._engine.dispose()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Database({self.url!r}, dialect={self.dialect!r})"


def _check_limits(max_rows: int, timeout_s: float) -> None:
    if max_rows < 1:
        raise ValueError(f"max_rows must be at least 1, got {max_rows}")
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s}")


def _since(started: float) -> float:
    return time.perf_counter() - started
