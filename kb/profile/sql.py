"""The profiler's queries against one table of a target database.

Queries are built with SQLAlchemy Core (so identifiers are quoted for the dialect), compiled
with literal values, and run through ``kb.target.readonly.run_limited`` on the database's read-only
engine: each has a time limit and a row cap. A query that times out or fails is logged and
recorded in ``warnings``; the profiler then goes on without the figures it would have given.

Samples are deterministic, so unchanged data gives the same statistics (and UKF hashes):

- SQLite tables: rows whose multiplicative hash of ``rowid`` falls under a threshold;
- PostgreSQL tables: ``TABLESAMPLE BERNOULLI(p) REPEATABLE(seed)`` (``SYSTEM`` for tables
  over ``HUGE_TABLE`` times the sample size);
- views (and any table where the above fails): the first rows.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy import ColumnClause, inspect
from sqlalchemy.engine.default import DefaultDialect
from sqlalchemy.engine.interfaces import ReflectedIndex, ReflectedUniqueConstraint
from sqlalchemy.sql import ColumnElement, Select

from kb.profile.model import ProfileOptions
from kb.target.database import Database
from kb.target.readonly import QueryFailedError, QueryTimeoutError, connect, run_limited
from kb.target.reflection import TableInfo

logger = logging.getLogger(__name__)

_HASH_MULTIPLIER = 2_654_435_761  # Knuth's multiplicative hash, modulo 2**32
_HASH_RANGE = 2**32
HUGE_TABLE = 100  # PostgreSQL tables over this many samples' worth of rows sample pages

# Aggregates a column can get: name -> expression builder.
AGGREGATES = ("non_null", "distinct", "min", "max", "avg", "max_length")


def _aggregate(stat: str, col: ColumnElement[Any]) -> ColumnElement[Any]:
    if stat == "non_null":
        return sa.func.count(col)
    if stat == "distinct":
        return sa.func.count(sa.distinct(col))
    if stat == "max_length":
        return sa.func.max(sa.func.length(sa.cast(col, sa.Text)))
    return getattr(sa.func, stat)(col)


class TableReader:
    """Runs the profiling queries of one table.

    Args:
        database: the target database (its read-only engine is used, without the SQL guard).
        info: the reflected table.
        options: limits (query timeout, sample size, seed).
    """

    def __init__(self, database: Database, info: TableInfo, options: ProfileOptions) -> None:
        self._engine = database.engine
        self._info = info
        self._options = options
        columns: Iterator[ColumnClause[Any]] = (sa.column(c.name) for c in info.columns)
        self._table = sa.table(info.name, *columns, schema=info.schema)
        dialect = self._engine.dialect
        # literal SQL runs without parameters, so '%' must not be escaped as for pyformat
        dialect_class = cast("type[DefaultDialect]", type(dialect))  # every engine's dialect is one
        self._dialect = dialect_class(paramstyle="named") if dialect.name != "sqlite" else dialect
        self.warnings: list[str] = []
        self.timed_out = False  # the last query ran past its time limit

    # ----------------------------------------------------------------- running

    def run(
        self, query: Select[Any], what: str, *, max_rows: int = 1
    ) -> list[tuple[Any, ...]] | None:
        """Rows of ``query`` or None when it timed out or failed (recorded in ``warnings``).

        Raises:
            TargetConnectionError: the database cannot be reached.
        """
        sql = str(query.compile(dialect=self._dialect, compile_kwargs={"literal_binds": True}))
        try:
            _columns, rows, _truncated = run_limited(
                self._engine, sql, max_rows=max_rows, timeout_s=self._options.query_timeout_s
            )
        except (QueryTimeoutError, QueryFailedError) as exc:
            self.timed_out = isinstance(exc, QueryTimeoutError)
            message = f"{self._info.name}: {what} failed: {exc}"
            logger.warning(message)
            self.warnings.append(message)
            return None
        self.timed_out = False
        return rows

    # ----------------------------------------------------------------- queries

    def row_count(self) -> int | None:
        """``COUNT(*)`` of the table, or None when the query failed."""
        rows = self.run(sa.select(sa.func.count()).select_from(self._table), "row count")
        return None if not rows else int(rows[0][0])

    def sample(self, columns: Sequence[str], row_count: int | None) -> list[tuple[Any, ...]]:
        """Up to ``sample_rows`` rows of ``columns``: every row when the table is that small."""
        limit = self._options.sample_rows
        cols = [self._table.c[name] for name in columns]
        everything = sa.select(*cols).limit(limit)
        if row_count is not None and row_count <= limit:
            return self.run(everything, "reading rows", max_rows=limit) or []
        if self._info.kind == "table" and row_count:
            rows = self.run(self._sampled(columns, row_count), "sampling", max_rows=limit)
            if rows is not None:
                return rows
        return self.run(everything, "reading the first rows", max_rows=limit) or []

    def _sampled(self, columns: Sequence[str], row_count: int) -> Select[Any]:
        fraction = min(1.0, self._options.sample_rows / row_count)
        limit = self._options.sample_rows
        if self._engine.dialect.name == "postgresql":
            # BERNOULLI picks rows (reads every page); SYSTEM picks pages, for huge tables
            method = sa.func.system if row_count > HUGE_TABLE * limit else sa.func.bernoulli
            sampled = sa.tablesample(
                self._table,
                method(max(round(100 * fraction, 6), 1e-6)),
                name="profile_sample",
                seed=sa.literal(self._options.seed),
            )
            return sa.select(*(sampled.c[name] for name in columns)).limit(limit)
        rowid: ColumnClause[Any] = sa.literal_column("rowid")
        bucket = ((rowid + self._options.seed) * _HASH_MULTIPLIER) % _HASH_RANGE
        threshold = int(fraction * _HASH_RANGE)
        cols = [self._table.c[name] for name in columns]
        return sa.select(*cols).where(bucket < threshold).limit(limit)

    def aggregates(self, plans: dict[str, tuple[str, ...]]) -> dict[str, dict[str, Any]]:
        """Whole-table aggregates, one query for all ``plans`` (``column -> stat names``).

        Falls back to one query per column when the combined query fails (an unsupported
        aggregate on some column type); a column whose query fails gets no figures, and none
        gets any when the combined query timed out.
        """
        plans = {name: stats for name, stats in plans.items() if stats}
        if not plans:
            return {}
        found = self._aggregate_query(plans, "aggregates")
        if found is not None or self.timed_out:  # one by one would only time out again
            return found or {}
        results: dict[str, dict[str, Any]] = {}
        for name, stats in plans.items():
            one = self._aggregate_query({name: stats}, f"aggregates of {name}")
            results.update(one or {})
        return results

    def _aggregate_query(
        self, plans: dict[str, tuple[str, ...]], what: str
    ) -> dict[str, dict[str, Any]] | None:
        labels: list[tuple[str, str]] = []
        selected = []
        for name, stats in plans.items():
            for stat in stats:
                selected.append(_aggregate(stat, self._table.c[name]))
                labels.append((name, stat))
        rows = self.run(sa.select(*selected).select_from(self._table), what)
        if not rows:
            return None
        results: dict[str, dict[str, Any]] = {}
        for (name, stat), value in zip(labels, rows[0], strict=True):
            results.setdefault(name, {})[stat] = value
        return results

    def top_values(self, column: str, k: int) -> list[tuple[Any, int]] | None:
        """The ``k`` most common non-null values of ``column`` with their counts (SQL)."""
        col = self._table.c[column]
        count = sa.func.count().label("n")
        query = (
            sa.select(col, count)
            .where(col.is_not(None))
            .group_by(col)
            .order_by(count.desc(), col)
            .limit(k)
        )
        rows = self.run(query, f"top values of {column}", max_rows=k)
        return None if rows is None else [(row[0], int(row[1])) for row in rows]

    def indexed_columns(self) -> set[str]:
        """Columns that lead an index, a unique constraint or the primary key."""
        found = set(self._info.primary_key[:1])
        if self._info.kind != "table":
            return found
        try:
            with connect(self._engine) as conn:
                inspector = inspect(conn)
                indexes = inspector.get_indexes(self._info.name, self._info.schema)
                uniques = inspector.get_unique_constraints(self._info.name, self._info.schema)
                conn.rollback()
        except sa.exc.SQLAlchemyError as exc:
            logger.warning("%s: cannot list indexes: %s", self._info.name, exc)
            return found
        items: list[ReflectedIndex | ReflectedUniqueConstraint] = [*indexes, *uniques]
        for item in items:
            names = item.get("column_names") or []
            if names and names[0]:
                found.add(names[0])
        return found
