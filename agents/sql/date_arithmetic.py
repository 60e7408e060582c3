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

A column is date text when the target declares it text, a date type or no type, and every
one of a sample of its values is an ISO date or timestamp (:data:`ISO_DATE`) that SQLite's
``julianday()`` reads; :class:`DateColumns` reads that once per column and remembers it. A
column is followed through the query's CTEs and derived tables to the table it comes from
(sqlglot's scopes), and an operand may be ``date()``/``datetime()`` of such a column, a CAST
of it to a date or a fractional number (``CAST(closed_at AS REAL)`` is the year too; a CAST
to INTEGER may be a deliberate year difference and is left alone), or its MIN or MAX.
"""

from __future__ import annotations

import logging
import re

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel, SqlglotError
from sqlglot.optimizer.scope import Scope, traverse_scope

from agents.sql.default_filters import Filtered
from agents.sql.extract import statement_only
from kb.target.database import Database

log = logging.getLogger(__name__)
ISO_DATE = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})?)?"
)
TEXT_TYPES = re.compile(r"^$|char|text|clob|string|date|time", re.I)  # what SQLite keeps as text
DATE_CASTS = {*exp.DataType.TEMPORAL_TYPES, *exp.DataType.REAL_TYPES}  # not INTEGER: years
MAX_DEPTH = 8  # CTEs and derived tables followed to a base table
SAMPLE = 20  # values of a column read to decide it holds dates
DATE_FUNCTIONS = {"date", "datetime"}
DAYS_NOTE = "days between dates stored as text"  # how each note starts
NOTE = DAYS_NOTE + ": {pairs} computed with julianday()"


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

    def holds_dates(self, table: str, column: str, timeout_s: float | None = None) -> bool:
        """Whether ``table.column`` is declared text (or a date) and its sampled values are
        ISO dates SQLite reads; a sample that could not be read (in ``timeout_s``) is not
        remembered."""
        key = (table.casefold(), column.casefold())
        if key not in self._known:
            found = self._read(table, column, timeout_s)
            if found is None:
                return False
            self._known[key] = found
        return self._known[key]

    def _read(self, table: str, column: str, timeout_s: float | None) -> bool | None:
        declared = self.columns_of(table).get(column.casefold())
        if declared is None or not TEXT_TYPES.search(declared):
            return False
        name = exp.column(column, quoted=True)
        day = exp.Anonymous(this="julianday", expressions=[name.copy()])
        query = (
            exp.select(name.copy(), day)
            .from_(exp.to_table(table, quoted=True))
            .where(exp.Not(this=exp.Is(this=name.copy(), expression=exp.Null())))
            .limit(SAMPLE)
        )
        options = {} if timeout_s is None else {"timeout_s": timeout_s}
        results = self.database.execute(query.sql(dialect="sqlite"), max_rows=SAMPLE, **options)
        if not results.ok:
            return None if results.error_kind == "timeout" else False
        return bool(results.rows) and all(
            isinstance(value, str) and ISO_DATE.fullmatch(value.strip()) and days is not None
            for value, days in results.rows
        )


def with_day_differences(
    sql: str, dates: DateColumns, timeout_s: float | None = None
) -> Filtered | None:
    """``sql`` (SQLite) with each difference of two date-text operands computed in days by
    ``julianday()``, and a note naming them; None when there is none (or ``sql`` does not
    parse or cannot be written back). ``timeout_s``: for each column's sample."""
    statement = statement_only(sql)
    if not statement:
        return None
    try:
        tree = sqlglot.parse_one(statement, read="sqlite")
        scopes = {id(c): scope for scope in traverse_scope(tree) for c in scope.columns}
    except (SqlglotError, RecursionError):
        return None
    if tree is None:
        return None
    changed: list[str] = []
    for node in list(tree.find_all(exp.Sub)):
        sides = []
        for side in (node.this, node.expression):
            operand, column = _operand(side)
            scope = scopes.get(id(column)) if column is not None else None
            if operand is None or column is None or scope is None:
                break
            origin = _origin(column, scope, dates)
            if origin is None or not dates.holds_dates(*origin, timeout_s=timeout_s):
                break
            sides.append(operand)
        if len(sides) != 2:
            continue
        changed.append(node.sql(dialect="sqlite"))
        days = exp.Sub(this=_julianday(sides[0]), expression=_julianday(sides[1]))
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


def _operand(node: exp.Expression) -> tuple[exp.Expression | None, exp.Column | None]:
    """(what julianday() should read, the column under it) for one side of a subtraction:
    a column, ``date()``/``datetime()`` of one, its MIN or MAX (read as they are), or a date
    or fractional CAST of one (the column itself read); (None, None) for anything else."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Cast) and node.to.this in DATE_CASTS:
        inner = node.this
        return (inner, inner) if isinstance(inner, exp.Column) else (None, None)
    inner = node
    if isinstance(node, exp.Date | exp.Max | exp.Min) and not node.expressions:
        inner = node.this
    elif isinstance(node, exp.Anonymous) and node.name.casefold() in DATE_FUNCTIONS:
        inner = node.expressions[0] if len(node.expressions) == 1 else None
    if isinstance(inner, exp.Column) and inner.name:
        return node, inner
    return None, None


def _origin(column: exp.Column, scope: Scope, dates: DateColumns) -> tuple[str, str] | None:
    """(table, column) ``column`` reads in ``scope``, followed through CTEs and derived
    tables (a projection that is a bare column, renamed or not) and to enclosing scopes (a
    correlated reference); None when it is no plain column of one table."""
    name = column.name
    for _ in range(MAX_DEPTH):
        source = _source(column, name, scope, dates)
        if source is None:
            return None
        if isinstance(source, exp.Table):
            return source.name, name
        select = source.expression
        if not isinstance(select, exp.Select):
            return None
        projected = next((p for p in select.expressions if p.alias_or_name == name), None)
        inner = projected.unalias() if projected is not None else None
        if not isinstance(inner, exp.Column):
            return None
        column, name, scope = inner, inner.name, source
    return None


def _source(
    column: exp.Column, name: str, scope: Scope | None, dates: DateColumns
) -> exp.Table | Scope | None:
    """The source of ``scope`` (or, failing that, of an enclosing one) ``column`` reads:
    the one its qualifier names, or the only one that has a column ``name``."""
    while scope is not None:
        sources = scope.sources
        if column.table:
            if column.table in sources:
                return sources[column.table]
        else:
            having = [s for s in sources.values() if _has(s, name, dates)]
            if len(having) == 1:
                return having[0]
            if having:
                return None  # ambiguous: the database will say so
        scope = scope.parent
    return None


def _has(source: exp.Table | Scope, name: str, dates: DateColumns) -> bool:
    if isinstance(source, exp.Table):
        return name.casefold() in dates.columns_of(source.name)
    select = source.expression
    return isinstance(select, exp.Select) and name in select.named_selects
