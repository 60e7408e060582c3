"""What a query gets before it runs, wherever it came from (a model's candidate, a filled
template, the SQL of an answer not run): the default filters of the question's knowledge it
lacks (:mod:`agents.sql.default_filters`) and, on SQLite, differences of dates stored as text
computed in days (:mod:`agents.sql.date_arithmetic`). A rewrite that cannot be made leaves the
query as written; it never costs an answer. Which columns hold dates is read from a sample of
their values (a few rows each, once per rewriter), also for the SQL of an answer not run."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from agents.sql.date_arithmetic import DateColumns, with_day_differences
from agents.sql.default_filters import DefaultFilter, Filtered, filtered_on, schema_columns
from kb.target.database import Database

log = logging.getLogger(__name__)


class QueryRewriter:
    """The rewrites of queries on ``database`` for one question (``filters``: its default
    filters); the schema and which columns hold dates are read once, when first needed."""

    def __init__(self, database: Database, filters: Iterable[DefaultFilter] = ()) -> None:
        self.database = database
        self.filters = tuple(filters)
        self._columns: dict[str, list[str]] | None = None
        self._dates: DateColumns | None = None

    def rewrite(
        self, sql: str, *, timeout_s: float | None = None, filters: bool = True
    ) -> Filtered | None:
        """``sql`` rewritten, with one note per change; None when nothing changed.
        ``timeout_s``: for each column's sample (which columns hold dates); ``filters``:
        False for the day differences alone (what is left to try when the database rejected
        the query with its default filters)."""
        filtered = None
        if filters:
            filtered = filtered_on(sql, self.filters, self.database, self._schema)
        if self.database.dialect != "sqlite":
            return filtered
        if self._dates is None:
            self._dates = DateColumns(self.database)
        try:
            days = with_day_differences(filtered.sql if filtered else sql, self._dates, timeout_s)
        except Exception as exc:  # a rewrite never costs an answer
            log.warning("day differences not computed for %r: %s", sql[:200], exc)
            return filtered
        if days is None:
            return filtered
        return Filtered(days.sql, [*(filtered.notes if filtered else []), *days.notes])

    def _schema(self) -> dict[str, list[str]]:
        if self._columns is None:
            self._columns = schema_columns(self.database)
        return self._columns
