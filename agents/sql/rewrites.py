"""What a query gets before it runs, wherever it came from (a model's candidate, a filled
template, the SQL of an answer not run): the default filters of the question's knowledge it
lacks (:mod:`agents.sql.default_filters`), the asker's own tables for another entity's
(:mod:`agents.sql.profile_tables`), the question's period for another one
(:mod:`agents.sql.period_pin`) and, on SQLite, differences of dates stored as text
computed in days (:mod:`agents.sql.date_arithmetic`). A rewrite that cannot be made leaves the
query as written; it never costs an answer. Which columns hold dates is read from a sample of
their values (a few rows each, once per rewriter), also for the SQL of an answer not run."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agents.rag.agent import RagContext
from agents.rag.question_facts import PeriodPin
from agents.sql.date_arithmetic import DateColumns, with_day_differences
from agents.sql.default_filters import (
    DefaultFilter,
    Filtered,
    chained,
    filtered_on,
    filters_for,
    schema_columns,
)
from agents.sql.period_pin import pin_for, with_pinned_period
from agents.sql.profile_tables import OwnTables, tables_for, with_own_tables
from kb.target.database import Database, Results
from kb.target.sql_guard import sqlglot_dialect

log = logging.getLogger(__name__)


@dataclass
class Executed:
    """What :meth:`QueryRewriter.execute` ran: ``sql`` (rewritten, or as written when every
    rewrite was rejected), one note per change or rejected rewrite, and its ``results``."""

    sql: str
    results: Results
    notes: list[str] = field(default_factory=list)


def question_rewrites(rag: RagContext) -> dict[str, Any]:
    """What the rules and time words of ``rag``'s question rewrite, as the refine options
    name them (``default_filters``, ``own_tables``, ``pinned_period``)."""
    return {
        "default_filters": filters_for(rag),
        "own_tables": tables_for(rag),
        "pinned_period": pin_for(rag),
    }


def rule_rewrites(
    sql: str,
    database: Database,
    filters: Iterable[DefaultFilter],
    tables: OwnTables | None,
    period: PeriodPin | None,
    read_columns: Callable[[], Mapping[str, Collection[str]]] | None = None,
) -> Filtered | None:
    """``sql`` with what the question's rules and time words rewrite, in order: the asker's
    own ``tables``, the pinned ``period``, then the default ``filters`` (``read_columns``: how
    to read the schema, see :func:`filtered_on`); None when nothing changed. A rewrite that
    fails is logged and skipped: it never costs an answer."""
    dialect = sqlglot_dialect(database.dialect)
    filtered = None
    if tables is not None:
        try:
            filtered = with_own_tables(sql, tables, dialect)
        except Exception as exc:
            log.warning("own tables not read for %r: %s", sql[:200], exc)
    if period is not None:
        try:
            pinned = with_pinned_period(filtered.sql if filtered else sql, period, dialect)
            filtered = chained(filtered, pinned)
        except Exception as exc:
            log.warning("period not pinned for %r: %s", sql[:200], exc)
    current = filtered.sql if filtered else sql
    return chained(filtered, filtered_on(current, filters, database, read_columns))


class QueryRewriter:
    """The rewrites of queries on ``database`` for one question (``filters``: its default
    filters; ``tables``: the asker's own tables; ``period``: the period its time words
    settle); the schema and which columns hold dates are read once, when first needed."""

    def __init__(
        self,
        database: Database,
        filters: Iterable[DefaultFilter] = (),
        tables: OwnTables | None = None,
        period: PeriodPin | None = None,
    ) -> None:
        self.database = database
        self.filters = tuple(filters)
        self.tables = tables
        self.period = period
        self._columns: dict[str, list[str]] | None = None
        self._dates: DateColumns | None = None

    @classmethod
    def for_question(cls, database: Database, rag: RagContext) -> QueryRewriter:
        """The rewriter of queries on ``database`` for ``rag``'s question."""
        found = question_rewrites(rag)
        return cls(database, found["default_filters"], found["own_tables"], found["pinned_period"])

    def rewrite(
        self, sql: str, *, timeout_s: float | None = None, filters: bool = True
    ) -> Filtered | None:
        """``sql`` rewritten, with one note per change; None when nothing changed.
        ``timeout_s``: for each column's sample (which columns hold dates); ``filters``:
        False for the day differences alone (what is left to try when the database rejected
        the query with its own tables and default filters)."""
        filtered = None
        if filters:
            filtered = rule_rewrites(
                sql, self.database, self.filters, self.tables, self.period, self._schema
            )
        if self.database.dialect != "sqlite":
            return filtered
        if self._dates is None:
            self._dates = DateColumns(self.database)
        try:
            days = with_day_differences(filtered.sql if filtered else sql, self._dates, timeout_s)
        except Exception as exc:  # a rewrite never costs an answer
            log.warning("day differences not computed for %r: %s", sql[:200], exc)
            return filtered
        return chained(filtered, days)

    def execute(
        self,
        sql: str,
        *,
        max_rows: int | None = None,
        time_limit: Callable[[], float | None] | None = None,
    ) -> Executed:
        """``sql`` run rewritten: with its default filters and day differences, then (when
        the database rejected that) with the day differences alone, then as written — the
        first the database does not reject for its SQL (a timeout or a dead database is
        an answer, not a reason to try the next). ``time_limit``: the limit of the next query,
        asked before each (None once the question's deadline has passed: the last failure,
        or nothing run, is returned); without it the database's own limit applies."""
        notes: list[str] = []
        tried: set[str] = set()
        limit = time_limit() if time_limit is not None else None
        for filters in (True, False):
            rewritten = self.rewrite(sql, timeout_s=limit, filters=filters)
            if rewritten is None or rewritten.sql in tried:
                continue
            tried.add(rewritten.sql)
            results = self.database.execute(rewritten.sql, max_rows=max_rows, timeout_s=limit)
            if not (results.error and results.error_kind == "sql"):
                return Executed(rewritten.sql, results, [*notes, *rewritten.notes])
            added = "; ".join(rewritten.notes)
            note = f"not kept ({added}): the query so rewritten failed: {results.error}"
            notes.append(note[:300])
            if time_limit is not None:
                limit = time_limit()
                if limit is None:
                    return Executed(sql, results, notes)
        return Executed(sql, self.database.execute(sql, max_rows=max_rows, timeout_s=limit), notes)

    def _schema(self) -> dict[str, list[str]]:
        if self._columns is None:
            self._columns = schema_columns(self.database)
        return self._columns
