"""Compose: a source query with one thing added, by sqlglot AST edits of its outer SELECT.

- ``filter``: a condition on a column of a table it reads: ``column = value`` for an
  enum-like column (a profiled value, most frequent first) or ``column > median`` for a
  measure;
- ``group``: an aggregate-only query (``SELECT COUNT(*) FROM ...``) answered per value of an
  enum-like column (the column added to the select list and to ``GROUP BY``);
- ``join``: a table reached along declared foreign keys (one hop, or two through a table
  with nothing to filter on), joined and filtered on one of its enum-like columns;
- ``window``: rows of the newest year (or month, when the data holds one year) of a temporal
  column, its bounds written in the column's stored format (``'202501'`` for a ``%Y%m``
  period), on a table the query has no time condition on yet.

Only a plain outer SELECT is edited (a set operation is left to ``decompose``); columns the
query already filters on are not filtered again. Each variant is a statement to check: the
synthesizer runs it and drops what fails or says nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from sqlglot import expressions as exp

from agents.learn.synth.variants import (
    ForeignKey,
    SynthSchema,
    Variant,
    column_table,
    literal,
    own_tables,
    parse,
)

VALUES_PER_COLUMN = 2
"""Filter values tried per enum-like column (the most frequent ones)."""


def compose(sql: str, schema: SynthSchema, transform: str) -> list[Variant]:
    """The variants of ``sql`` that ``transform`` (filter, group, join, window) makes."""
    tree = parse(sql, schema.dialect)
    if not isinstance(tree, exp.Select):
        return []
    makers = {"filter": _filters, "group": _groupings, "join": _joins, "window": _windows}
    variants: dict[str, Variant] = {}
    for edited, change, detail in makers[transform](tree, schema):
        text = edited.sql(dialect=schema.dialect)
        variants.setdefault(text, Variant(transform, text, change, sql, detail))
    return list(variants.values())


Edit = tuple[exp.Select, str, dict[str, Any]]


def _filtered(tree: exp.Select, schema: SynthSchema) -> set[tuple[str, str]]:
    """(table, column) pairs the query already filters or groups on, folded."""
    found: set[tuple[str, str]] = set()
    for node in tree.find_all(exp.Where, exp.Group, exp.Having):
        for column in node.find_all(exp.Column):
            table = column_table(column, schema)
            if table is not None:
                found.add((table.casefold(), column.name.casefold()))
    return found


def _condition(alias: str, column: str, op: type[exp.Binary], value: object) -> exp.Expression:
    return op(this=exp.column(column, table=alias), expression=literal(value))


def _filters(tree: exp.Select, schema: SynthSchema) -> Iterator[Edit]:
    taken = _filtered(tree, schema)
    for alias, table in own_tables(tree).items():
        for resources in schema.columns(table):
            column = str(resources["column"])
            if (table.casefold(), column.casefold()) in taken:
                continue
            if schema.enum_like(resources):
                for value in schema.enum_values(table, column)[:VALUES_PER_COLUMN]:
                    condition = _condition(alias, column, exp.EQ, value)
                    change = f"keep only the rows where {table}.{column} = {literal(value).sql()}"
                    detail = {"table": table, "column": column, "op": "=", "value": value}
                    yield tree.copy().where(condition, copy=False), change, detail
                continue
            value = schema.threshold(resources)
            if value is not None and int(resources["statistics"].get("distinct_count") or 0) > 2:
                condition = _condition(alias, column, exp.GT, value)
                change = f"keep only the rows where {table}.{column} > {literal(value).sql()}"
                detail = {"table": table, "column": column, "op": ">", "value": value}
                yield tree.copy().where(condition, copy=False), change, detail


def _aggregate_only(tree: exp.Select) -> bool:
    """Every projection is an aggregate, and nothing groups, limits or deduplicates yet."""
    if tree.args.get("group") or tree.args.get("distinct") or tree.args.get("limit"):
        return False
    projections = tree.expressions
    return bool(projections) and all(p.find(exp.AggFunc) is not None for p in projections)


def _groupings(tree: exp.Select, schema: SynthSchema) -> Iterator[Edit]:
    if not _aggregate_only(tree):
        return
    taken = _filtered(tree, schema)
    for alias, table in own_tables(tree).items():
        for resources in schema.columns(table):
            column = str(resources["column"])
            if (table.casefold(), column.casefold()) in taken or not schema.enum_like(resources):
                continue
            edited = tree.copy()
            key = exp.column(column, table=alias)
            edited.set("expressions", [key.copy(), *edited.expressions])
            edited = edited.group_by(key, copy=False)
            change = f"give the result for each {table}.{column} (grouped by it)"
            yield edited, change, {"table": table, "column": column}


def _paths(schema: SynthSchema, start: str, avoid: set[str]) -> Iterator[list[ForeignKey]]:
    """Foreign-key paths from ``start`` to a table outside ``avoid`` with an enum-like
    column: one hop, or two through a table that has none."""
    for first in schema.foreign_keys(start):
        if first.ref_table.casefold() in avoid:
            continue
        if _filterable(schema, first.ref_table):
            yield [first]
            continue
        for second in schema.foreign_keys(first.ref_table):
            far = second.ref_table.casefold() not in avoid | {start.casefold()}
            if far and _filterable(schema, second.ref_table):
                yield [first, second]


def _filterable(schema: SynthSchema, table: str) -> list[dict[str, Any]]:
    return [r for r in schema.columns(table) if schema.enum_like(r)]


def _joins(tree: exp.Select, schema: SynthSchema) -> Iterator[Edit]:
    tables = own_tables(tree)
    if not tables or tree.find(exp.Subquery) is not None:
        return
    used = {name.casefold() for name in tables.values()}
    aliases = {alias.casefold() for alias in tables}
    for alias, table in tables.items():
        for path in _paths(schema, table, used):
            edited, previous = _qualified(tree, tables), alias
            for step in path:
                name = _free_alias(step.ref_table, aliases)
                on = exp.EQ(
                    this=exp.column(step.column, table=previous),
                    expression=exp.column(step.ref_column, table=name),
                )
                edited = edited.join(
                    exp.alias_(exp.to_table(step.ref_table), name, table=True),
                    on=on,
                    copy=False,
                )
                previous = name
            target = path[-1].ref_table
            resources = _filterable(schema, target)[0]
            column = str(resources["column"])
            value = schema.enum_values(target, column)[0]
            edited = edited.where(_condition(previous, column, exp.EQ, value), copy=False)
            route = " -> ".join(
                f"{s.table}.{s.column} = {s.ref_table}.{s.ref_column}" for s in path
            )
            change = (
                f"keep only the rows linked (through {route}) to a {target} whose {column} is "
                f"{literal(value).sql()}"
            )
            detail = {"path": [s.__dict__ for s in path], "column": column, "value": value}
            yield edited, change, detail
            return  # one join per query: the first path found


def _qualified(tree: exp.Select, tables: dict[str, str]) -> exp.Select:
    """A copy of ``tree`` whose unqualified columns name their table, when it reads one
    table (a joined table may have columns of the same name)."""
    copy = tree.copy()
    if len(tables) == 1:
        alias = next(iter(tables))
        outputs = {a.alias.casefold() for a in copy.expressions if isinstance(a, exp.Alias)}
        for column in copy.find_all(exp.Column):
            if not column.table and column.name.casefold() not in outputs:
                column.set("table", exp.to_identifier(alias))
    return copy


def _free_alias(table: str, taken: set[str]) -> str:
    name, n = table, 2
    while name.casefold() in taken:
        name, n = f"{table}_{n}", n + 1
    taken.add(name.casefold())
    return name


def _windows(tree: exp.Select, schema: SynthSchema) -> Iterator[Edit]:
    taken = _filtered(tree, schema)
    for alias, table in own_tables(tree).items():
        temporal = [r for r in schema.columns(table) if schema.time_range(r) is not None]
        if any((table.casefold(), str(r["column"]).casefold()) in taken for r in temporal):
            continue  # the query already has a time window on this table
        for resources in temporal:
            column = str(resources["column"])
            bounds = schema.time_range(resources)
            assert bounds is not None
            (start, end), label = _newest_period(*bounds)
            stored = schema.time_format(resources)
            start, end = start.strftime(stored), end.strftime(stored)
            low = _condition(alias, column, exp.GTE, start)
            high = _condition(alias, column, exp.LT, end)
            edited = tree.copy().where(exp.and_(low, high), copy=False)
            change = f"keep only the rows whose {table}.{column} falls in {label}"
            detail = {"table": table, "column": column, "from": start, "to": end}
            yield edited, change, detail


def _newest_period(low: str, high: str) -> tuple[tuple[datetime, datetime], str]:
    """[start, end) of the newest year of ``low``..``high`` (ISO), or of the newest month
    when both are in one year; and its name."""
    year = int(high[:4])
    month = int(high[5:7]) if len(high) >= 7 else 1
    if low[:4] != high[:4]:
        return (datetime(year, 1, 1), datetime(year + 1, 1, 1)), f"the year {year}"
    following = datetime(year + 1, 1, 1) if month == 12 else datetime(year, month + 1, 1)
    return (datetime(year, month, 1), following), f"the month {year:04d}-{month:02d}"
