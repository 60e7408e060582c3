"""Differences of dates stored as text, computed in days on SQLite instead of silently wrong.

SQLite has no date type: a CSV's timestamps are TEXT (``'2023-01-02 06:58:00'``), and a
query a model writes as for PostgreSQL, ``AVG(closed_at - opened_at)``, runs and returns a
number: text minus text converts each side's leading digits, so the difference of two
timestamps of one year is 0. InsightBench's incident tables are read that way (32 of its 60
tasks ask about resolution times). :func:`with_day_differences` rewrites each such
subtraction, ``a - b`` where both sides are columns holding ISO dates or timestamps as text
(or ``date()``/``datetime()`` of one), into ``(julianday(a) - julianday(b))``: the difference
in days, fractions included. Other dialects have date types whose subtraction is right, or
reject text minus text with an error the repair loop sees; they are left alone.

A column is date text when the target declares it text (or no type) and every one of a
sample of its values is an ISO date or timestamp (:data:`ISO_DATE`);
:class:`DateColumns` reads that once per column and remembers it.
"""

from __future__ import annotations

import logging
import re

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel, SqlglotError

from agents.sql.default_filters import Filtered
from agents.sql.extract import statement_only
from kb.target.database import Database

log = logging.getLogger(__name__)
ISO_DATE = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?(?:Z|[+-]\d{2}:?\d{2})?"
)
TEXT_TYPES = re.compile(r"^$|char|text|clob|string", re.I)
SAMPLE = 20  # values of a column read to decide it holds dates
DATE_FUNCTIONS = {"date", "datetime"}
NOTE = "days between dates stored as text: {pairs} computed with julianday()"


class DateColumns:
    """Which columns of ``database`` hold dates as text, each read once (a sample of its
    values) when first asked about."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self._known: dict[tuple[str, str], bool] = {}
        self._columns: dict[str, dict[str, str]] = {}  # table -> column -> declared type

    def columns_of(self, table: str) -> dict[str, str]:
        """``table``'s columns by lower-cased name, with their declared type ({} if unknown)."""
        key = table.casefold()
        if key not in self._columns:
            try:
                info = self.database.table_info(table)
                self._columns[key] = {c.name.casefold(): c.type or "" for c in info.columns}
            except Exception as exc:  # an unknown table: the query's problem, not ours
                log.debug("date columns: %s not read: %s", table, exc)
                self._columns[key] = {}
        return self._columns[key]

    def holds_dates(self, table: str, column: str) -> bool:
        """Whether ``table.column`` is declared text and its sampled values are ISO dates."""
        key = (table.casefold(), column.casefold())
        if key not in self._known:
            self._known[key] = self._read(table, column)
        return self._known[key]

    def _read(self, table: str, column: str) -> bool:
        declared = self.columns_of(table).get(column.casefold())
        if declared is None or not TEXT_TYPES.search(declared):
            return False
        name = exp.column(column, quoted=True)
        query = (
            exp.select(name.copy())
            .from_(exp.to_table(table, quoted=True))
            .where(exp.Not(this=exp.Is(this=name.copy(), expression=exp.Null())))
            .limit(SAMPLE)
        )
        results = self.database.execute(query.sql(dialect="sqlite"), max_rows=SAMPLE)
        if not results.ok or not results.rows:
            return False
        return all(isinstance(r[0], str) and ISO_DATE.fullmatch(r[0].strip()) for r in results.rows)


def with_day_differences(sql: str, dates: DateColumns) -> Filtered | None:
    """``sql`` (SQLite) with each difference of two date-text operands computed in days by
    ``julianday()``, and a note naming them; None when there is none (or ``sql`` does not
    parse)."""
    statement = statement_only(sql)
    if not statement:
        return None
    try:
        tree = sqlglot.parse_one(statement, read="sqlite")
    except (SqlglotError, RecursionError):
        return None
    if tree is None:
        return None
    changed: list[str] = []
    for node in list(tree.find_all(exp.Sub)):
        left, right = _date_operand(node.this, dates), _date_operand(node.expression, dates)
        if left is None or right is None:
            continue
        changed.append(node.sql(dialect="sqlite"))
        days = exp.Sub(this=_julianday(left), expression=_julianday(right))
        node.replace(exp.Paren(this=days))
    if not changed:
        return None
    try:
        rewritten = tree.sql(dialect="sqlite", unsupported_level=ErrorLevel.RAISE)
    except (SqlglotError, RecursionError) as exc:
        log.debug("date differences: cannot write %r back: %s", sql, exc)
        return None
    # the model's comment lines before the statement (its reasoning header) are kept
    head = sql[: sql.rfind(statement)] if statement in sql else ""
    return Filtered(head + rewritten, [NOTE.format(pairs=", ".join(changed))])


def _julianday(operand: exp.Expression) -> exp.Expression:
    return exp.Anonymous(this="julianday", expressions=[operand.copy()])


def _date_operand(node: exp.Expression, dates: DateColumns) -> exp.Expression | None:
    """What julianday() should read for ``node``, one side of a subtraction: a date-text
    column, ``date()``/``datetime()`` of one, or the column a numeric CAST of one reads
    (``CAST(closed_at AS REAL)`` is the year too); None for anything else."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Cast) and node.to.is_type(*exp.DataType.NUMERIC_TYPES):
        node = node.this
    return node if _date_column(node, dates) is not None else None


def _date_column(node: exp.Expression, dates: DateColumns) -> exp.Column | None:
    """The date-text column ``node`` is (or ``date()``/``datetime()`` of), else None."""
    if isinstance(node, exp.Date) and not node.expressions:
        node = node.this
    elif isinstance(node, exp.Anonymous) and node.name.casefold() in DATE_FUNCTIONS:
        if len(node.expressions) != 1:
            return None
        node = node.expressions[0]
    if not isinstance(node, exp.Column) or not node.name:
        return None
    table = _table_of(node, dates)
    return node if table is not None and dates.holds_dates(table, node.name) else None


def _table_of(column: exp.Column, dates: DateColumns) -> str | None:
    """The table ``column`` reads in its SELECT: the one its qualifier names (alias or
    name), or the only table of the SELECT's FROM and JOINs that has such a column."""
    select = column.find_ancestor(exp.Select)
    if select is None:
        return None
    tables: dict[str, str] = {}
    sources = [select.args.get("from_"), *(select.args.get("joins") or [])]
    for source in sources:
        if source is not None and isinstance(source.this, exp.Table):
            table = source.this
            tables[(table.alias_or_name or table.name).casefold()] = table.name
    if column.table:
        return tables.get(column.table.casefold())
    having = [t for t in tables.values() if column.name.casefold() in dates.columns_of(t)]
    return having[0] if len(having) == 1 else None
