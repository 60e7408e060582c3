"""Whether the answered SQL reads what the question asks about, or something beside it.

Two mistakes of a small model return a plausible result and run without error, so neither
the result's shape nor a repair shows them; the SQL and the schema do:

- ``projection_echoes_filter``: every column the outer SELECT returns is one its own WHERE
  holds equal to a literal. "What states border montana" answered with ``SELECT state_name
  FROM state WHERE state_name = 'montana'`` returns the question's own value.
- ``attribute_via_reference``: the SELECT returns a column of rows that only reference the
  entity the question names, while that entity's own table holds a column of the same name.
  "What is the population of alaska" answered with ``SELECT city.population FROM city WHERE
  city.state_name = 'alaska'`` reads its cities' populations; ``state_name`` is unique in
  ``state``, not in ``city``, and ``state`` has a ``population``. Counted only when that
  filter is the WHERE's one condition and the query neither groups nor orders (a second
  condition, ``city_name = 'erie'``, names a row of ``city`` itself; an ORDER BY picks one).

On the bench's greedy answers of the 1.5B (docs/benchmarks.md, Confidence) the first fires
on 8 wrong GeoQuery answers and 1 wrong Spider answer and on no right one; the second on 7
wrong GeoQuery answers and no right one. Both are left out when the SQL does not parse; the
second also when the schema is unknown (``keys`` empty).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp


@dataclass(frozen=True)
class SchemaKeys:
    """A database's tables with their columns (lower case), and the columns whose values are
    unique in their table: profiled with one distinct value per row (a column of a composite
    primary key is marked as a key but is not unique alone)."""

    columns: dict[str, frozenset[str]] = field(default_factory=dict)
    unique: frozenset[tuple[str, str]] = frozenset()

    @classmethod
    def from_columns(cls, resources: list[dict[str, Any]]) -> SchemaKeys:
        """From the ``content_resources`` of a database's Column entries."""
        columns: dict[str, set[str]] = {}
        unique: set[tuple[str, str]] = set()
        for r in resources:
            table, column = str(r.get("table") or "").lower(), str(r.get("column") or "").lower()
            if not table or not column:
                continue
            columns.setdefault(table, set()).add(column)
            if _profiled_unique(r.get("statistics") or {}):
                unique.add((table, column))
        return cls({t: frozenset(c) for t, c in columns.items()}, frozenset(unique))


def _profiled_unique(statistics: dict[str, Any]) -> bool:
    identifier = statistics.get("identifier") or {}
    if identifier.get("unique"):
        return True
    rows, distinct = statistics.get("row_count"), statistics.get("distinct_count")
    exact = statistics.get("counts_exact", True)
    return bool(exact) and isinstance(rows, int) and rows > 0 and distinct == rows


def sql_reading(tree: exp.Expression, keys: SchemaKeys) -> dict[str, float]:
    """The features above for the parsed answer ``tree`` (``keys``: its database's schema)."""
    select = tree if isinstance(tree, exp.Select) else None  # a UNION's parts are not read
    features = {"projection_echoes_filter": float(select is not None and _echoes_filter(select))}
    if keys.columns:
        via = select is not None and _via_reference(select, keys)
        features["attribute_via_reference"] = float(via)
    return features


def _echoes_filter(select: exp.Select) -> bool:
    projected = [_column(p) for p in select.expressions]
    if not projected or any(c is None for c in projected):
        return False
    held = [column for column, _ in _literal_filters(select)]
    return all(any(_same(c, h) for h in held) for c in projected if c is not None)


def _via_reference(select: exp.Select, keys: SchemaKeys) -> bool:
    if select.args.get("group") is not None or select.args.get("order") is not None:
        return False
    conditions = _conditions(select)
    filters = _literal_filters(select)
    if len(conditions) != 1 or len(filters) != 1:
        return False
    aliases = _tables(select)
    column, _ = filters[0]
    table = _table_of(column, aliases, keys)
    key = column.name.lower()
    if table is None or (table, key) in keys.unique:
        return False
    for projection in select.expressions:
        read = _column(projection, through_aggregate=True)
        if read is None or _table_of(read, aliases, keys) != table or read.name.lower() == key:
            continue
        for other, columns in keys.columns.items():
            owns = other != table and (other, key) in keys.unique
            if owns and read.name.lower() in columns:
                return True
    return False


def _column(projection: exp.Expression, *, through_aggregate: bool = False) -> exp.Column | None:
    node = projection.this if isinstance(projection, exp.Alias) else projection
    if through_aggregate and isinstance(node, exp.AggFunc):
        node = node.this
    if isinstance(node, exp.Distinct):
        node = node.expressions[0] if node.expressions else None
    return node if isinstance(node, exp.Column) else None


def _same(one: exp.Column, other: exp.Column) -> bool:
    """The same column: the same name, and the same qualifier when both have one."""
    if one.name.lower() != other.name.lower():
        return False
    return not (one.table and other.table) or one.table.lower() == other.table.lower()


def _own_scope(select: exp.Select) -> Iterator[exp.Expression]:
    """The nodes of ``select``'s WHERE outside its subqueries."""
    where = select.args.get("where")
    if where is None:
        return
    stack: list[exp.Expression] = [where.this]
    while stack:
        node = stack.pop()
        if isinstance(node, exp.Select | exp.Subquery):
            continue
        yield node
        stack.extend(node.iter_expressions())


_CONDITIONS = (
    *(exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE),
    *(exp.In, exp.Like, exp.Between, exp.Is),
)


def _conditions(select: exp.Select) -> list[exp.Expression]:
    return [node for node in _own_scope(select) if isinstance(node, _CONDITIONS)]


def _literal_filters(select: exp.Select) -> list[tuple[exp.Column, exp.Literal]]:
    """``column = 'literal'`` comparisons of ``select``'s own WHERE (either side)."""
    found = []
    for node in _own_scope(select):
        if isinstance(node, exp.EQ):
            left, right = node.left, node.right
            if isinstance(right, exp.Column):
                left, right = right, left
            if isinstance(left, exp.Column) and isinstance(right, exp.Literal):
                found.append((left, right))
    return found


def _tables(select: exp.Select) -> dict[str, str]:
    """Alias (or name) → table name, lower case, of the tables ``select`` itself reads."""
    tables: dict[str, str] = {}
    sources = [
        select.args.get("from_") or select.args.get("from"),
        *(select.args.get("joins") or []),
    ]
    for source in sources:
        if source is None:
            continue
        table = source.this
        if isinstance(table, exp.Table):
            tables[(table.alias or table.name).lower()] = table.name.lower()
    return tables


def _table_of(column: exp.Column, aliases: dict[str, str], keys: SchemaKeys) -> str | None:
    if column.table:
        return aliases.get(column.table.lower())
    name = column.name.lower()
    owners = [t for t in aliases.values() if name in keys.columns.get(t, frozenset())]
    return owners[0] if len(owners) == 1 else None
