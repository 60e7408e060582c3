"""What a gold SQL query uses: its tables, its (table-qualified) columns and its literals.

Columns are qualified with sqlglot's ``qualify`` against the database schema, so aliases and
unqualified names resolve to real tables; when qualification fails, columns are resolved by
name against the query's tables. Everything is lower-cased.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.qualify import qualify

log = logging.getLogger(__name__)
Schema = dict[str, dict[str, str]]


@dataclass
class SqlElements:
    tables: set[str] = field(default_factory=set)
    columns: set[tuple[str, str]] = field(default_factory=set)
    literals: set[str] = field(default_factory=set)


def sql_elements(sql: str, schema: Schema, dialect: str = "sqlite") -> SqlElements:
    """Tables, ``(table, column)`` pairs and string literals of ``sql`` (lower-case)."""
    lowered = {
        t.lower(): {c.lower(): kind for c, kind in cols.items()} for t, cols in schema.items()
    }
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except sqlglot.errors.SqlglotError as exc:
        log.debug("unparsable gold SQL %r: %s", sql, exc)
        return SqlElements()
    found = SqlElements()
    found.tables = {t.name.lower() for t in tree.find_all(exp.Table) if t.name.lower() in lowered}
    strings = [lit.this for lit in tree.find_all(exp.Literal) if lit.is_string]
    known = {c for cols in lowered.values() for c in cols}
    strings += [  # SQLite reads "x" as a string when no column is called x (Spider relies on it)
        col.name
        for col in tree.find_all(exp.Column)
        if col.this.args.get("quoted") and col.name.lower() not in known
    ]
    found.literals = {_strip_like(v).lower() for v in strings if _strip_like(v).strip()}
    try:
        qualified = qualify(
            tree.copy(),
            schema=lowered,
            dialect=dialect,
            quote_identifiers=False,
            validate_qualify_columns=False,
        )
        aliases = _alias_map(qualified)
        for column in qualified.find_all(exp.Column):
            table = aliases.get(column.table.lower(), column.table.lower())
            if table in lowered and column.name.lower() in lowered[table]:
                found.columns.add((table, column.name.lower()))
    except (sqlglot.errors.SqlglotError, KeyError, ValueError) as exc:
        log.debug("could not qualify %r: %s", sql, exc)
    for column in tree.find_all(exp.Column):  # fallback: resolve by name among the tables
        owners = [t for t in found.tables if column.name.lower() in lowered[t]]
        if len(owners) == 1:
            found.columns.add((owners[0], column.name.lower()))
    return found


def _alias_map(tree: exp.Expression) -> dict[str, str]:
    return {t.alias_or_name.lower(): t.name.lower() for t in tree.find_all(exp.Table)}


def _strip_like(value: str) -> str:
    return value.strip("%")
