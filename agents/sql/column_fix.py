"""Column references qualified with the wrong table, fixed from the schema without a model.

Small models often write ``T2.age`` where ``age`` belongs to ``T1`` (the other table of the
join), or qualify a column with a table the query never reads (``language.Language`` when
only ``countrylanguage`` has ``Language``). When exactly one table of the same ``SELECT`` has
the column, the reference is re-qualified with that table's alias; anything ambiguous is left
to the model. Correlated references to an enclosing query, derived tables and columns that no
table of the query has are never touched. The refine agent tries this only on SQL the
database rejected, and keeps the result only when it runs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

from kb.target.database import Database
from kb.target.sql_guard import sqlglot_dialect

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Requalified:
    """The rewritten query and one note per changed reference (``T2.age -> T1.age``)."""

    sql: str
    notes: list[str]


class ColumnQualifierFix:
    """Re-qualifies column references by the tables of ``database`` that hold them."""

    def __init__(self, database: Database, dialect: str = "sqlite") -> None:
        self.database = database
        self.dialect = sqlglot_dialect(dialect)

    def apply(self, sql: str) -> Requalified | None:
        """``sql`` with its misplaced column references moved; None when none could be."""
        try:
            tree = sqlglot.parse_one(sql, read=self.dialect)
            scopes = traverse_scope(tree)
        except (sqlglot.errors.SqlglotError, RecursionError) as exc:
            log.debug("column fix: cannot read %r: %s", sql, exc)
            return None
        columns = self._columns()
        notes: list[str] = []
        for scope in scopes:
            notes.extend(_requalify_scope(scope, columns))
        if not notes:
            return None
        return Requalified(tree.sql(dialect=self.dialect), notes)

    def _columns(self) -> dict[str, set[str]]:
        """Lower-cased column names by lower-cased table name."""
        return {
            name.lower(): {column.name.lower() for column in info.columns}
            for name, info in self.database.reflect().items()
        }


def _requalify_scope(scope: Scope, columns: dict[str, set[str]]) -> list[str]:
    if any(not isinstance(source, exp.Table) for source in scope.sources.values()):
        return []  # a derived table's columns are not in the schema: leave it to the model
    tables = {alias.lower(): source.name.lower() for alias, source in scope.sources.items()}
    outer = {alias.lower() for parent in _parents(scope) for alias in parent.sources}
    notes = []
    for column in scope.columns:
        qualifier, name = column.table.lower(), column.name.lower()
        if not qualifier or not name or (qualifier not in tables and qualifier in outer):
            continue
        if qualifier in tables and name in columns.get(tables[qualifier], ()):
            continue
        owners = [alias for alias, table in tables.items() if name in columns.get(table, ())]
        if len(owners) != 1:
            continue
        alias = _spelled(scope, owners[0])
        note = f"{column.table}.{column.name} -> {alias}.{column.name}"
        if note not in notes:
            notes.append(note)
        column.set("table", exp.to_identifier(alias))
    return notes


def _parents(scope: Scope) -> list[Scope]:
    found, current = [], scope.parent
    while current is not None:
        found.append(current)
        current = current.parent
    return found


def _spelled(scope: Scope, alias: str) -> str:
    """The alias as the query spells it."""
    return next((a for a in scope.sources if a.lower() == alias), alias)
