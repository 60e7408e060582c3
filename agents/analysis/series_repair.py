"""A time series asked for and answered with one row: the GROUP BY the SQL left out, put back.

A plan's series step (the history a forecast is fitted to, a diagnostic's monthly series)
asks for "one row per month". A small model often writes the month beside the aggregate and
forgets the grouping: ``SELECT period, SUM(amount) FROM income WHERE region = 'EUR' ORDER BY
period``. SQLite runs that and returns one row (the whole sum, beside one arbitrary period),
so the forecast gets no series. :func:`grouped_by_bare_columns` adds the GROUP BY such a
query plainly meant: every projected expression that is not an aggregate. It is applied only
to a series step whose answer came back with fewer than :data:`MIN_SERIES_ROWS` rows, and the
regrouped query's rows replace the answer's only when it returns more rows
(:func:`regrouped_series`); the evidence says what was changed.
"""

from __future__ import annotations

import logging

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from agents.analysis.models import Evidence
from kb.target.database import Database

log = logging.getLogger(__name__)
MIN_SERIES_ROWS = 3


def grouped_by_bare_columns(sql: str, dialect: str) -> str | None:
    """``sql`` with a GROUP BY of its projected non-aggregate expressions (and, when it has
    none, an ORDER BY of the first of them), or None when that does not apply: the query
    does not parse, is not one plain SELECT, already groups, has no aggregate or no bare
    column beside one, or uses a window function."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError:
        return None
    if not isinstance(tree, exp.Select) or tree.args.get("group") or tree.find(exp.Window):
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


def regrouped_series(
    item: Evidence, database: Database, *, max_rows: int, timeout_s: float
) -> Evidence:
    """A series step's evidence with its one-row answer regrouped
    (:func:`grouped_by_bare_columns`) when that returns more rows; ``item`` itself
    otherwise (enough rows already, no SQL, nothing to regroup, the regrouped query failed
    or gave no more rows)."""
    if not item.sql or item.row_count >= MIN_SERIES_ROWS:
        return item
    fixed = grouped_by_bare_columns(item.sql, database.dialect)
    if fixed is None:
        return item
    results = database.execute(fixed, max_rows=max_rows, timeout_s=timeout_s)
    if not results.ok or results.row_count <= item.row_count:
        log.info("series %s: the regrouped query gave no more rows (%s)", item.id, results.error)
        return item
    log.info("series %s: regrouped, %d rows (was %d)", item.id, results.row_count, item.row_count)
    return item.model_copy(
        update={
            "sql": fixed,
            "columns": list(results.columns),
            "rows": [list(row) for row in results.rows],
            "row_count": results.row_count,
            "truncated": results.truncated,
            "error": None,
            "repair": f"the query returned {item.row_count} row(s) for a series: grouped by "
            "its non-aggregate columns",
        }
    )
