"""A forecast's history made whole: the range the model cut taken out, the question's filters
it forgot put back (for a predictive question's series steps only: a diagnostic's series
is about the period the question names).

The plan's history step asks for the measure "one row per month over every month the data
holds". The 1.5B wrote ``... WHERE region_name = 'Europe' AND period BETWEEN '202001' AND
'202312' GROUP BY period`` (two years of six: the forecast for January 2026 was made from
December 2023), and ``period BETWEEN '202404' AND '202412'`` (nine months).
:func:`widened_history` takes the bounds on the series' time column out (a BETWEEN, a
comparison, a LIKE on it) and a LIMIT with them, and keeps the query that way when it
returns more periods.

The same history added up every caliber and report item, where the direct query for the
same question had filtered ``caliber = 'A' AND report_item_level1 = 'Revenue' AND
country_code = 'US' AND region_code = 'EUR'`` (the 1.5B read "US dollars" as a country).
:func:`with_direct_filters` adds the direct query's conditions the history lacks, one at a
time, and keeps each that leaves every period of the series in place: ``caliber = 'A'``
and ``report_item_level1 = 'Revenue'`` do, ``country_code = 'US'`` (no row in Europe) does
not, nor does a condition that picks some periods (``fiscal_month = 1``). Both apply only to
one SELECT over one table (no join) grouped by the time column; the evidence says what was
changed.

A series step may come back with no series at all: asked "in which month should we expect
Helix's revenue to peak, as history: one row per month", the model selected the latest month
alone, with no measure. :func:`series_of_direct` then reads the direct query, when that is
grouped by the time column (``... GROUP BY period ORDER BY revenue DESC LIMIT 1``), whole
and in time order.
"""

from __future__ import annotations

import logging
import time

from sqlglot import exp

from agents.analysis.charts import roles
from agents.analysis.models import Evidence
from agents.analysis.series_repair import (
    MIN_SERIES_ROWS,
    and_conditions,
    history_of,
    one_select,
    regrouped_series,
    replaced,
)
from kb.target.database import Database
from kb.target.sql_guard import sqlglot_dialect

log = logging.getLogger(__name__)
MIN_QUERY_S = 5.0  # a repair query gets at least this long, as the analyst's model calls do
_RANGE = (exp.Between, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like)
_FILTER = (exp.EQ, exp.In)


def _series_select(sql: str | None, time_column: str, dialect: str) -> exp.Select | None:
    """``sql`` parsed, when it is one SELECT over one table (no join) grouped by
    ``time_column``."""
    tree = one_select(sql or "", dialect)
    if tree is None or tree.args.get("joins"):
        return None
    source = tree.args.get("from_")
    if source is None or not isinstance(source.this, exp.Table):
        return None
    group = tree.args.get("group")
    if group is None or not any(_is_column(g, time_column) for g in group.expressions):
        return None
    return tree


def _is_column(node: exp.Expression, name: str) -> bool:
    return isinstance(node, exp.Column) and node.name.casefold() == name.casefold()


def _bounds_time(condition: exp.Expression, time_column: str) -> bool:
    """Whether ``condition`` bounds the range of ``time_column``: a BETWEEN, comparison or
    LIKE whose subject is the column itself."""
    return isinstance(condition, _RANGE) and _is_column(condition.this, time_column)


def _with_where(tree: exp.Select, conditions: list[exp.Expression]) -> exp.Select:
    rebuilt = tree.copy()
    rebuilt.set("where", None)
    return rebuilt.where(exp.and_(*(c.copy() for c in conditions))) if conditions else rebuilt


def widened(sql: str, time_column: str, dialect: str) -> str | None:
    """``sql``, a series grouped by ``time_column``, with the bounds on that column's range
    and its LIMIT taken out, in time order; None when it has neither or is no such series."""
    tree = _series_select(sql, time_column, dialect)
    if tree is None:
        return None
    conditions = and_conditions(tree)
    kept = [c for c in conditions if not _bounds_time(c, time_column)]
    if len(kept) == len(conditions) and not tree.args.get("limit"):
        return None
    wider = _with_where(tree, kept)
    wider.set("limit", None)
    wider.set("order", None)
    group = wider.args["group"].expressions
    by_time = next(g for g in group if _is_column(g, time_column))  # as the query spells it
    return wider.order_by(by_time.copy()).sql(dialect=dialect)


def has_series(item: Evidence) -> bool:
    """Whether ``item``'s rows are a series: at least :data:`MIN_SERIES_ROWS` of them, with a
    time column and a measure beside it (``SELECT MAX(period) ...`` has no measure)."""
    if item.error is not None or item.row_count < MIN_SERIES_ROWS:
        return False
    found = roles(item.columns, item.rows)
    return found["time"] is not None and found["measure"] is not None


def series_of_direct(
    item: Evidence,
    direct: Evidence | None,
    time_column: str,
    database: Database,
    *,
    max_rows: int,
    timeout_s: float,
) -> Evidence:
    """A series step that got no series (:func:`has_series`) answered by the ``direct``
    query when that is grouped by ``time_column``: its bounds on that column and its LIMIT
    taken out, in time order ("in which month will revenue peak" was asked directly as
    ``... GROUP BY period ORDER BY revenue DESC LIMIT 1``, and as history with ``SELECT
    MAX(period)``, no measure). ``item`` itself when it has a series or that does not run."""
    if has_series(item) or direct is None or direct.error is not None or not direct.sql:
        return item
    dialect = sqlglot_dialect(database.dialect)
    grouped = _series_select(direct.sql, time_column, dialect)
    if grouped is None:
        return item
    sql = widened(direct.sql, time_column, dialect)
    if sql is None:
        by_time = next(g for g in grouped.args["group"].expressions if _is_column(g, time_column))
        sql = grouped.order_by(by_time.copy(), append=False).sql(dialect=dialect)
    results = database.execute(sql, max_rows=max_rows, timeout_s=timeout_s)
    if not results.ok or results.truncated:
        return item
    why = f"the series made from {direct.id}'s query, in {time_column} order, whole"
    made = replaced(item, sql, results, _also(item, why))
    if not has_series(made):
        return item
    log.info("series %s: made from %s's query, %d rows", item.id, direct.id, results.row_count)
    return made


def widened_history(
    item: Evidence, time_column: str, database: Database, *, max_rows: int, timeout_s: float
) -> Evidence:
    """A series step's evidence over every period the data holds (:func:`widened`) when
    that returns more rows; ``item`` itself otherwise."""
    if item.error is not None:
        return item
    sql = widened(item.sql or "", time_column, sqlglot_dialect(database.dialect))
    if sql is None:
        return item
    results = database.execute(sql, max_rows=max_rows, timeout_s=timeout_s)
    if not results.ok or results.truncated or results.row_count <= item.row_count:
        return item  # a cut series in time order would keep the oldest periods, not the newest
    log.info("series %s: widened, %d rows (was %d)", item.id, results.row_count, item.row_count)
    why = f"the bounds on {time_column} taken out: every period the data holds"
    return replaced(item, sql, results, _also(item, why))


def _filters(select: exp.Select, time_column: str) -> list[exp.Expression]:
    """The conditions of ``select``'s WHERE that compare a column with values (``=``,
    ``IN``) and do not name ``time_column``."""
    found: list[exp.Expression] = []
    for condition in and_conditions(select):
        if not isinstance(condition, _FILTER) or condition.find(exp.Select):
            continue
        columns = list(condition.find_all(exp.Column))
        if len(columns) == 1 and columns[0].name.casefold() != time_column.casefold():
            found.append(condition)
    return found


def with_direct_filters(
    item: Evidence,
    direct: Evidence | None,
    time_column: str,
    database: Database,
    *,
    max_rows: int,
    timeout_s: float,
) -> Evidence:
    """A series step's evidence with each of the ``direct`` query's value filters on a
    column it does not filter added, one at a time, where the series keeps every period it
    had (a condition the data contradicts, or one that picks some periods, is left out);
    ``item`` itself when none is added, the two read different tables or either is not
    such a query."""
    if direct is None or direct.error is not None or item.error is not None:
        return item
    if item.row_count < MIN_SERIES_ROWS or item.truncated:
        return item
    dialect = sqlglot_dialect(database.dialect)
    series = _series_select(item.sql, time_column, dialect)
    source = one_select(direct.sql or "", dialect)
    if series is None or source is None or source.args.get("joins"):
        return item
    if not _table(source) or _table(series) != _table(source):
        return item
    # a column the history filters already is its own reading ("caliber = 'A'" written
    # bare by the model, "income_zephyr.caliber = 'A'" by the default filters)
    have = {c.name.casefold() for f in and_conditions(series) for c in f.find_all(exp.Column)}
    candidates = [c for c in _filters(source, time_column) if _column_of(c) not in have]
    deadline = time.monotonic() + timeout_s
    conditions, results, added = and_conditions(series), None, []
    for candidate in candidates:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        trial = _with_where(series, [*conditions, _unqualified(candidate)]).sql(dialect=dialect)
        ran = database.execute(trial, max_rows=max_rows, timeout_s=left)
        if ran.ok and ran.row_count == item.row_count and not ran.truncated:
            conditions, results = [*conditions, _unqualified(candidate)], ran
            added.append(candidate.sql(dialect=dialect))
    if results is None:
        return item
    sql = _with_where(series, conditions).sql(dialect=dialect)
    log.info("series %s: %s's filters added: %s", item.id, direct.id, added)
    why = f"{direct.id}'s filters added, every period kept: {', '.join(added)}"
    return replaced(item, sql, results, _also(item, why))


def _unqualified(condition: exp.Expression) -> exp.Expression:
    """``condition`` with its column's table qualifier dropped: the direct query's alias
    (``t.item``) means nothing in the history, which reads one table too."""
    bare = condition.copy()
    for column in bare.find_all(exp.Column):
        column.set("table", None)
    return bare


def _column_of(condition: exp.Expression) -> str:
    column = condition.find(exp.Column)
    return column.name.casefold() if column is not None else ""


def _table(select: exp.Select) -> str:
    """The table ``select`` reads from alone; "" for none (``SELECT 1``) or a subquery."""
    source = select.args.get("from_")
    if source is None or not isinstance(source.this, exp.Table):
        return ""
    return source.this.name.casefold()


def _also(item: Evidence, why: str) -> str:
    """``why`` after the repairs ``item`` had already."""
    return f"{item.repair}; {why}" if item.repair else why


def repaired_series(
    item: Evidence,
    direct: Evidence | None,
    time_column: str,
    database: Database,
    *,
    predictive: bool,
    max_rows: int,
    seconds: float,
) -> Evidence:
    """A series step's evidence repaired on ``database`` within ``seconds`` in all: regrouped
    when one row came back, or made from the ``direct`` question's query when that filters
    more (:mod:`agents.analysis.series_repair`), or when it got no series
    (:func:`series_of_direct`); for a ``predictive`` question then over every period the
    data holds, with the direct query's filters it lacks and the data allows."""
    deadline = time.monotonic() + seconds

    def left() -> float:
        return max(MIN_QUERY_S, deadline - time.monotonic())

    if item.error is None:
        item = regrouped_series(
            item, database, time_column=time_column, max_rows=max_rows, timeout_s=left()
        )
    item = history_of(item, direct, time_column, database, max_rows=max_rows, timeout_s=left())
    item = series_of_direct(
        item, direct, time_column, database, max_rows=max_rows, timeout_s=left()
    )
    if not predictive:
        return item
    item = widened_history(item, time_column, database, max_rows=max_rows, timeout_s=left())
    return with_direct_filters(
        item, direct, time_column, database, max_rows=max_rows, timeout_s=left()
    )
