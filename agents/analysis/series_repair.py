"""A time series asked for and answered with one row: the GROUP BY the SQL left out, put back.

A plan's series step (the history a forecast is fitted to, a diagnostic's monthly series)
asks for "one row per month". A small model often writes the month beside the aggregate and
forgets the grouping: ``SELECT period, SUM(amount) FROM income WHERE region = 'EUR' ORDER BY
period``. SQLite runs that and returns one row (the whole sum, beside one arbitrary period),
so the forecast gets no series. :func:`grouped_by_bare_columns` adds the GROUP BY such a
query plainly meant: every projected expression that is not an aggregate; a query of
aggregates alone (the whole range summed: ``SELECT SUM(amount) ... WHERE period BETWEEN
...``) gets the step's time column projected and grouped by (:func:`grouped_by_time`). It
is applied only to a series step whose answer came back with fewer than
:data:`MIN_SERIES_ROWS` rows, and the regrouped query's rows replace the answer's only when it
returns more rows
(:func:`regrouped_series`); the evidence says what was changed.

The model also writes a history with fewer filters than the direct query it wrote for the
same question: "if the trend continues, how much revenue will Zephyr make in Europe next
month?" was answered with ``SUM(ptd_amt_eur) ... WHERE caliber = 'A' AND
report_item_level1 = 'Revenue' AND region_code = 'EUR' AND period = '202508'``, its history
with only ``region_name = 'Europe'`` (every caliber and report item added up).
:func:`series_from_direct` makes the history from the direct query itself: its filter on the
time column taken out, grouped and ordered by that column. :func:`history_of` keeps the one
of the two that holds more of the question's filters (the derived one only when it runs and
gives a series).
"""

from __future__ import annotations

import logging

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from agents.analysis.models import Evidence
from kb.target.database import Database
from kb.target.results import Results
from kb.target.sql_guard import sqlglot_dialect

log = logging.getLogger(__name__)
MIN_SERIES_ROWS = 3


def one_select(sql: str, dialect: str) -> exp.Select | None:
    """``sql`` parsed, when it is one SELECT that uses no window function."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError:
        return None
    if not isinstance(tree, exp.Select) or tree.find(exp.Window):
        return None
    return tree


def _plain_select(sql: str, dialect: str) -> exp.Select | None:
    """``sql`` parsed, when it is one SELECT that neither groups nor uses a window."""
    tree = one_select(sql, dialect)
    return None if tree is None or tree.args.get("group") else tree


def grouped_by_bare_columns(sql: str, dialect: str) -> str | None:
    """``sql`` with a GROUP BY of its projected non-aggregate expressions (and, when it has
    none, an ORDER BY of the first of them), or None when that does not apply: the query
    does not parse, is not one plain SELECT, already groups, has no aggregate or no bare
    column beside one, or uses a window function."""
    tree = _plain_select(sql, dialect)
    if tree is None:
        return None
    bare: list[exp.Expression] = []
    aggregated = False
    for projection in tree.expressions:
        inner = projection.this if isinstance(projection, exp.Alias) else projection
        if inner.find(exp.Star) and not inner.find(exp.AggFunc):  # SELECT *, t.*
            return None
        if inner.find(exp.AggFunc):
            aggregated = True
        elif inner.find(exp.Column):
            bare.append(inner)
    if not aggregated or not bare:
        return None
    regrouped = tree.group_by(*(b.copy() for b in bare), copy=True)
    if not regrouped.args.get("order"):
        regrouped = regrouped.order_by(bare[0].copy(), copy=False)
    return regrouped.sql(dialect=dialect)


def grouped_by_time(sql: str, time_column: str, dialect: str) -> str | None:
    """``sql``, a SELECT of aggregates alone (no grouping, no window), with ``time_column``
    projected first and grouped and ordered by: the series the step asked for, where the
    model summed the whole range into one row; None when that does not apply."""
    tree = _plain_select(sql, dialect)
    if tree is None:
        return None
    if not tree.expressions or not all(p.find(exp.AggFunc) for p in tree.expressions):
        return None
    column = exp.column(time_column)
    series = tree.copy()
    series.set("expressions", [column.copy(), *(p.copy() for p in tree.expressions)])
    series.set("order", None)
    series.set("limit", None)
    return series.group_by(column.copy(), copy=False).order_by(column.copy()).sql(dialect=dialect)


def regrouped_series(
    item: Evidence,
    database: Database,
    *,
    max_rows: int,
    timeout_s: float,
    time_column: str = "",
) -> Evidence:
    """A series step's evidence with its one-row answer regrouped
    (:func:`grouped_by_bare_columns`; with ``time_column``, a sum of the whole range by
    :func:`grouped_by_time`) when that returns more rows; ``item`` itself otherwise (enough
    rows already, no SQL, nothing to regroup, the regrouped query failed or gave no more
    rows)."""
    if not item.sql or item.row_count >= MIN_SERIES_ROWS:
        return item
    fixed, how = (
        grouped_by_bare_columns(item.sql, sqlglot_dialect(database.dialect)),
        "its non-aggregate columns",
    )
    if fixed is None and time_column:
        fixed, how = (
            grouped_by_time(item.sql, time_column, sqlglot_dialect(database.dialect)),
            time_column,
        )
    if fixed is None:
        return item
    results = database.execute(fixed, max_rows=max_rows, timeout_s=timeout_s)
    if not results.ok or results.row_count <= item.row_count:
        log.info("series %s: the regrouped query gave no more rows (%s)", item.id, results.error)
        return item
    log.info("series %s: regrouped, %d rows (was %d)", item.id, results.row_count, item.row_count)
    why = f"the query returned {item.row_count} row(s) for a series: grouped by {how}"
    return replaced(item, fixed, results, why)


def series_from_direct(sql: str, time_column: str, dialect: str) -> str | None:
    """The direct query ``sql`` as a series over ``time_column``: its conditions on that
    column taken out of the WHERE (an AND of conditions), the column projected first and
    grouped and ordered by; None when ``sql`` is not one plain SELECT of aggregates alone
    (no grouping, no window, no bare column) filtering ``time_column``."""
    tree = _plain_select(sql, dialect)
    if tree is None:
        return None
    source = tree.args.get("from_")
    if source is None or not isinstance(source.this, exp.Table) or tree.args.get("joins"):
        return None  # one table: a join's conditions are not the question's filters alone
    if not all(p.find(exp.AggFunc) for p in tree.expressions):
        return None
    conditions = and_conditions(tree)
    on_time = [c for c in conditions if _names_column(c, time_column)]
    if not on_time or any(c.find(exp.Or) for c in on_time):
        return None
    kept = [c for c in conditions if c not in on_time]
    column = exp.column(time_column)
    series = exp.select(column.copy(), *(p.copy() for p in tree.expressions))
    series = series.from_(source.this.copy())
    if kept:
        series = series.where(exp.and_(*(c.copy() for c in kept)))
    return series.group_by(column.copy()).order_by(column.copy()).sql(dialect=dialect)


def filters(sql: str | None, time_column: str, dialect: str) -> int:
    """How many conditions the WHERE of ``sql``'s outer SELECT ANDs that do not name
    ``time_column`` (a history's bound on its range is no filter of the question's); 0 for
    none or no parse."""
    if not sql:
        return 0
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError:
        return 0
    if not isinstance(tree, exp.Select):
        return 0
    return sum(1 for c in and_conditions(tree) if not _names_column(c, time_column))


def history_of(
    item: Evidence,
    direct: Evidence | None,
    time_column: str,
    database: Database,
    *,
    max_rows: int,
    timeout_s: float,
) -> Evidence:
    """A series step's evidence, or the series made from the ``direct`` query
    (:func:`series_from_direct`) when that runs, gives at least :data:`MIN_SERIES_ROWS`
    rows and filters more (one condition on the time column aside) than the step's own SQL,
    or the step has no series."""
    if direct is None or not direct.sql or direct.error is not None:
        return item
    derived = series_from_direct(direct.sql, time_column, sqlglot_dialect(database.dialect))
    if derived is None:
        return item
    own = filters(item.sql, time_column, sqlglot_dialect(database.dialect))
    mine = filters(derived, time_column, sqlglot_dialect(database.dialect))
    has_series = item.error is None and item.row_count >= MIN_SERIES_ROWS
    if has_series and mine <= own:
        return item
    results = database.execute(derived, max_rows=max_rows, timeout_s=timeout_s)
    if not results.ok or results.row_count < MIN_SERIES_ROWS:
        return item
    log.info("series %s: from %s's query (%d filters, own %d)", item.id, direct.id, mine, own)
    why = (
        f"the series made from {direct.id}'s query, its filters kept and its period grouped "
        f"({mine} filters; the step's own query had {own})"
    )
    return replaced(item, derived, results, why)


def replaced(item: Evidence, sql: str, results: Results, repair: str) -> Evidence:
    """``item`` answered by ``sql``'s ``results`` instead, ``repair`` saying why."""
    return item.model_copy(
        update={
            "sql": sql,
            "columns": list(results.columns),
            "rows": [list(row) for row in results.rows],
            "row_count": results.row_count,
            "truncated": results.truncated,
            "error": None,
            "repair": repair,
        }
    )


def _names_column(condition: exp.Expression, name: str) -> bool:
    return any(c.name.casefold() == name.casefold() for c in condition.find_all(exp.Column))


def and_conditions(select: exp.Select) -> list[exp.Expression]:
    """The conditions the WHERE of ``select`` ANDs (none without a WHERE), through any
    parentheses around an AND (``(a AND b) AND c``, as sqlglot writes a condition added to
    a WHERE that had two)."""
    where = select.args.get("where")
    return [] if where is None else _conjuncts(where.this)


def _conjuncts(condition: exp.Expression) -> list[exp.Expression]:
    inner = condition.unnest()
    if isinstance(inner, exp.And):
        return [c for part in inner.flatten() for c in _conjuncts(part)]
    return [inner]
