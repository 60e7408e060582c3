"""What a transform makes, and the profiled schema the transforms draw from.

A :class:`Variant` is one synthetic SQL statement made from a source experience's SQL by one
transform (``filter``, ``group``, ``join``, ``window``, ``decompose``, ``vary``), with
``change``: the edit in words, for the LLM that writes its question. :class:`SynthSchema`
reads what the transforms need from :class:`agents.learn.mine.schema_view.SchemaView` (the
profiled Table, Column and Enum entries): a column's enum values (most frequent first), its
numeric statistics, its time range, and the declared foreign keys of a table.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import sqlglot
from sqlglot import expressions as exp
from sqlglot.errors import SqlglotError

from agents.learn.mine.schema_view import SchemaView
from agents.learn.mine.sql_facts import QUOTED_STRING_DIALECTS, quoted_values_as_strings
from kb.target.sql_guard import sqlglot_dialect

TRANSFORMS = ("filter", "group", "join", "window", "decompose", "vary")
"""Every transform, in the order a source's variants are interleaved."""
MAX_GROUP_VALUES = 20
"""A column with more distinct values is not enum-like enough to group by."""


@dataclass(frozen=True)
class Variant:
    """A synthetic SQL statement: ``transform`` made it from ``source_sql`` by ``change``."""

    transform: str
    sql: str
    change: str
    source_sql: str
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ForeignKey:
    """``table.column`` references ``ref_table.ref_column`` (names as the database spells
    them)."""

    table: str
    column: str
    ref_table: str
    ref_column: str


def sql_key(sql: str, dialect: str) -> str:
    """A key equal for statements that differ only in spacing, case of keywords or quoting
    style (sqlglot's normalised text; the text itself when it does not parse)."""
    dialect = sqlglot_dialect(dialect)
    try:
        text = sqlglot.parse_one(sql, read=dialect).sql(dialect=dialect, normalize=True)
    except SqlglotError:
        text = " ".join(sql.split())
    return hashlib.sha256(text.casefold().encode()).hexdigest()[:32]


def parse(sql: str, dialect: str) -> exp.Query | None:
    """The statement as a sqlglot query, or None when it does not parse as one. SQLite's and
    MySQL's double-quoted strings compared with a column (Spider's ``country = "France"``)
    are read as strings, as :mod:`agents.learn.mine.sql_facts` reads them."""
    dialect = sqlglot_dialect(dialect)
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError:
        return None
    if not isinstance(tree, exp.Query):
        return None
    if dialect in QUOTED_STRING_DIALECTS:
        quoted_values_as_strings(tree)
    return tree


class SynthSchema:
    """The profiled schema of one database, as the transforms read it."""

    def __init__(self, view: SchemaView, dialect: str) -> None:
        self.view, self.dialect = view, dialect

    def table_name(self, name: str) -> str | None:
        """The table's name as the database spells it (None: not profiled)."""
        entry = self.view.table(name)
        return str(entry.content_resources.get("table") or entry.name) if entry else None

    def columns(self, table: str) -> list[dict[str, Any]]:
        """The column entries' resources of ``table``, by column name."""
        key = table.casefold()
        found = [e.content_resources for (t, _), e in self.view.columns.items() if t == key]
        return sorted(found, key=lambda r: str(r["column"]).casefold())

    def enum_values(self, table: str, column: str) -> list[str | int | float]:
        """The profiled values of ``table.column``, most frequent first (ties by value)."""
        entries = self.view.enums.get((table.casefold(), column.casefold()), {})
        resources = sorted(
            (e.content_resources for e in entries.values()),
            key=lambda r: (-float(r.get("frequency") or 0.0), str(r.get("value"))),
        )
        return [r["value"] for r in resources if r.get("value") is not None]

    def enum_like(self, resources: dict[str, Any]) -> bool:
        """A categorical column with profiled values and few distinct ones (not a name or an
        identifier: each of its values is held by more than one row, on average)."""
        stats = resources.get("statistics") or {}
        distinct = int(stats.get("distinct_count") or 0)
        rows = int(stats.get("non_null_count") or 0)
        if resources.get("semantic_type") != "categorical" or not 1 < distinct <= MAX_GROUP_VALUES:
            return False
        values = self.enum_values(resources["table"], resources["column"])
        return bool(values) and rows > distinct

    def numeric_stats(self, resources: dict[str, Any]) -> dict[str, Any] | None:
        """The numeric statistics of a measure column (not an identifier), else None."""
        if resources.get("semantic_type") != "numeric":
            return None
        numeric = (resources.get("statistics") or {}).get("numeric") or {}
        return numeric if isinstance(numeric.get("p50"), int | float) else None

    def threshold(self, resources: dict[str, Any]) -> int | float | None:
        """A measure column's median, whole for an integer column (a filter's value)."""
        stats = self.numeric_stats(resources)
        if stats is None:
            return None
        median = float(stats["p50"])
        return int(median) if stats.get("kind") == "integer" else round(median, 2)

    def time_range(self, resources: dict[str, Any]) -> tuple[str, str] | None:
        """The ISO bounds of a temporal column, else None."""
        temporal = (resources.get("statistics") or {}).get("temporal") or {}
        low, high = temporal.get("min_iso"), temporal.get("max_iso")
        return (str(low), str(high)) if low and high else None

    def time_format(self, resources: dict[str, Any]) -> str:
        """The strftime format a temporal column stores its values in (ISO date without
        one)."""
        temporal = (resources.get("statistics") or {}).get("temporal") or {}
        return str(temporal.get("format") or "%Y-%m-%d")

    def foreign_keys(self, table: str) -> list[ForeignKey]:
        """Declared foreign keys from or to ``table``, each read from ``table``'s side."""
        found: list[ForeignKey] = []
        key = table.casefold()
        for name, entry in sorted(self.view.tables.items()):
            for fk in entry.content_resources.get("foreign_keys") or []:
                pairs = zip(fk["columns"], fk["ref_columns"], strict=False)
                for column, ref in pairs:
                    own = str(entry.content_resources.get("table") or entry.name)
                    ref_table = self.table_name(fk["ref_table"]) or fk["ref_table"]
                    if name == key and ref_table.casefold() != key:
                        found.append(ForeignKey(own, column, ref_table, ref))
                    elif fk["ref_table"].casefold() == key and name != key:
                        found.append(ForeignKey(ref_table, ref, own, column))
        return list(dict.fromkeys(found))


def own_tables(select: exp.Select) -> dict[str, str]:
    """Alias (or name) → table name of the tables ``select`` itself reads (not those of its
    subqueries), in the order they appear."""
    found: dict[str, str] = {}
    for table in select.find_all(exp.Table):
        if table.find_ancestor(exp.Select) is select and table.name:
            found.setdefault(table.alias_or_name, table.name)
    return found


def column_table(column: exp.Column, schema: SynthSchema) -> str | None:
    """The table ``column`` belongs to: by its qualifier, else the one table of its SELECT
    that has such a column (None: unknown or ambiguous)."""
    select = column.find_ancestor(exp.Select)
    tables = own_tables(select) if select is not None else {}
    if column.table:
        folded = {alias.casefold(): name for alias, name in tables.items()}
        return folded.get(column.table.casefold())
    names = set(tables.values())
    if len(names) == 1:
        return next(iter(names))
    having = [t for t in names if schema.view.column(t, column.name) is not None]
    return having[0] if len(having) == 1 else None


def literal(value: object) -> exp.Expression:
    """``value`` as a SQL literal (a whole float written as an integer)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return exp.convert(value)
