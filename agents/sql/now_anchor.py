"""Relative dates on data that ends in the past: "the last three months" written as
``processed_date >= DATE('now', '-3 months')`` finds nothing when the table's newest row is
two years old (InsightBench's tables end in 2023-2024; the 1.5B wrote ``'now'`` in 3 of 120
queries, each empty or NULL). When such a query comes back empty, :class:`NowAnchor` reads the
newest value of the date columns compared with "now" and runs the query again with "now"
read as that instant — kept only when it then returns data, with a note that says so (an
analyst asking about a live table gets the real date whenever it has rows).

"Now" is SQLite's ``'now'`` argument to its date functions (``DATE``, ``DATETIME``,
``JULIANDAY``, ``STRFTIME``), ``CURRENT_DATE`` / ``CURRENT_TIMESTAMP`` and PostgreSQL's
``NOW()``. The date columns are the ones in the same comparison (``col >= <now...>``,
``JULIANDAY('now') - JULIANDAY(col) < 30``), resolved to their tables through the aliases
of the SELECT that reads them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from sqlglot import exp

from agents.confidence.sql_shape import parse_statement
from agents.sql.default_filters import Filtered, schema_columns
from kb.target.database import Database
from kb.target.sql_guard import sqlglot_dialect

log = logging.getLogger(__name__)

NOTE = "no rows at today's date: the data ends at {latest}, read as 'now'"
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between)


@dataclass(frozen=True)
class _Reference:
    """One "now" in a query and the date columns compared with it."""

    node: exp.Expression
    columns: tuple[exp.Column, ...]


class NowAnchor:
    """Rewrites of queries on ``database`` whose "now" lies past the data; ``today``: the
    real date (a parameter for tests), the newest values read once per column."""

    def __init__(self, database: Database, today: datetime | None = None) -> None:
        self.database = database
        self.today = today
        self._schema: dict[str, list[str]] | None = None
        self._latest: dict[str, datetime | None] = {}

    def anchored(self, sql: str, *, timeout_s: float | None = None) -> Filtered | None:
        """``sql`` with each "now" read as the newest date of the columns compared with it,
        when that lies before today; None when ``sql`` has no "now", its columns hold no
        dates, the data reaches today, or the query does not parse."""
        dialect = sqlglot_dialect(self.database.dialect)
        tree = parse_statement(sql, dialect)
        if tree is None:
            return None
        references = _references(tree)
        if not references:
            return None
        latest = [self._newest(c, timeout_s) for r in references for c in r.columns]
        found = [d for d in latest if d is not None]
        today = self.today or datetime.now()
        if not found or max(found).date() >= today.date():
            return None
        instant = max(found)
        for reference in references:
            reference.node.replace(_instant(reference.node, instant, dialect))
        try:
            rewritten = tree.sql(dialect=dialect)
        except Exception as exc:
            log.debug("now anchor not written back for %r: %s", sql[:200], exc)
            return None
        shown = instant.isoformat(sep=" ").removesuffix(" 00:00:00")
        return Filtered(rewritten, [NOTE.format(latest=shown)])

    def _newest(self, column: exp.Column, timeout_s: float | None) -> datetime | None:
        table = _table_of(column, self._columns())
        if table is None:
            return None
        query = exp.select(exp.Max(this=exp.column(column.name, quoted=column.this.quoted)))
        source = table.copy()
        source.set("alias", None)
        query = query.from_(source)
        key = query.sql(dialect=sqlglot_dialect(self.database.dialect))
        if key not in self._latest:
            results = self.database.execute(key, max_rows=1, timeout_s=timeout_s)
            value = results.rows[0][0] if results.ok and results.rows else None
            self._latest[key] = _as_datetime(value)
        return self._latest[key]

    def _columns(self) -> dict[str, list[str]]:
        if self._schema is None:
            self._schema = schema_columns(self.database)
        return self._schema


def _references(tree: exp.Expression) -> list[_Reference]:
    """Each "now" of ``tree`` inside a comparison, with the columns of that comparison."""
    nodes: list[exp.Expression] = [
        *tree.find_all(exp.CurrentDate, exp.CurrentTimestamp, exp.CurrentDatetime),
        *(
            literal
            for literal in tree.find_all(exp.Literal)
            if literal.is_string and literal.this.strip().lower() == "now"
        ),
    ]
    found: list[_Reference] = []
    for node in nodes:
        comparison = node.find_ancestor(*_COMPARISONS)
        if comparison is None:
            continue
        columns = tuple(comparison.find_all(exp.Column))
        if columns:
            found.append(_Reference(node, columns))
    return found


def _table_of(column: exp.Column, schema: dict[str, list[str]]) -> exp.Table | None:
    """The table ``column`` reads: by its qualifier among the sources of the SELECT it is
    in, or, unqualified, the one source whose table has it."""
    select = column.find_ancestor(exp.Select)
    if select is None:
        return None
    sources = [t for t in select.find_all(exp.Table) if t.find_ancestor(exp.Select) is select]
    if column.table:
        qualifier = column.table.lower()
        named = [t for t in sources if (t.alias or t.name).lower() == qualifier]
        return named[0] if len(named) == 1 else None
    name = column.name.lower()
    having = [t for t in sources if name in {c.lower() for c in schema.get(t.name.lower(), [])}]
    return having[0] if len(having) == 1 else None


def _as_datetime(value: object) -> datetime | None:
    """A stored date or timestamp (ISO text, or a datetime) as a datetime; None otherwise."""
    if isinstance(value, datetime):
        return value.replace(tzinfo=None)
    if not isinstance(value, str) or len(value) < 10:
        return None
    try:
        return datetime.fromisoformat(value[:19].replace("T", " "))
    except ValueError:
        return None


def _instant(node: exp.Expression, instant: datetime, dialect: str) -> exp.Expression:
    """What replaces ``node``: a literal of ``instant`` (the date alone for a current
    date), cast to DATE or TIMESTAMP outside SQLite, where a text is no date."""
    is_date = isinstance(node, exp.CurrentDate)
    text = instant.date().isoformat() if is_date else instant.isoformat(sep=" ")
    literal = exp.Literal.string(text)
    if dialect == "sqlite" or isinstance(node, exp.Literal):
        return literal
    return exp.cast(literal, "DATE" if is_date else "TIMESTAMP")
