"""Joins that join nothing: ``JOIN b ON a.id = a.id`` runs, and pairs every row of ``a``
with every row of ``b``; the rows come back, so neither an error nor an empty result tells
the refine agent anything is wrong (InsightBench flag-18: the 1.5B joined the assets to the
users ``ON flag_18.serial_number = flag_18.serial_number`` and averaged over the product).

:func:`unlinked_joins` names each ``JOIN ... ON`` whose condition cannot link the joined
table to the tables before it: a comparison of a column with itself, or a condition whose
qualified columns all belong to one side. A condition with an unqualified column is not
judged (which table it reads is the database's to resolve), nor is a join without ON (a
CROSS JOIN or a USING is written on purpose).
"""

from __future__ import annotations

import logging

from sqlglot import exp

from agents.confidence.sql_shape import parse_statement
from kb.target.sql_guard import sqlglot_dialect

log = logging.getLogger(__name__)


def unlinked_joins(
    sql: str, dialect: str = "sqlite", *, tree: exp.Expression | None = None
) -> list[str]:
    """One description per join of ``sql`` whose ON links nothing (empty: none, or ``sql``
    does not parse). ``tree``: ``sql`` already parsed (the answer's signals parse it once)."""
    dialect = sqlglot_dialect(dialect)
    if tree is None:
        tree = parse_statement(sql, dialect)
    if tree is None:  # not ours to judge: the database will say what is wrong
        return []
    found: list[str] = []
    for select in tree.find_all(exp.Select):
        found.extend(_unlinked_in(select, dialect))
    return found


def _unlinked_in(select: exp.Select, dialect: str) -> list[str]:
    source = select.args.get("from") or select.args.get("from_")
    if source is None:
        return []
    before = {_name(source.this)}
    found: list[str] = []
    for join in select.args.get("joins") or []:
        joined = _name(join.this)
        condition = join.args.get("on")
        if condition is not None and joined and None not in before:
            problem = _problem(condition, joined, before, dialect)
            if problem:
                found.append(problem)
        before.add(joined)
    return found


def _problem(condition: exp.Expression, joined: str, before: set[str | None], dialect: str) -> str:
    """What is wrong with ``condition`` as the link of ``joined`` to ``before`` ('' if
    nothing, or if it cannot be told)."""
    on = condition.sql(dialect=dialect)
    for equality in condition.find_all(exp.EQ):
        left, right = equality.this, equality.expression
        if isinstance(left, exp.Column) and left == right:
            return f"JOIN {joined} ON {on}: compares {left.sql(dialect=dialect)} with itself"
    columns = list(condition.find_all(exp.Column))
    if not columns or any(not c.table for c in columns):
        return ""
    tables = {c.table.lower() for c in columns}
    if joined in tables and tables & {b for b in before if b}:
        return ""
    side = joined if joined in tables else ", ".join(sorted(tables))
    return f"JOIN {joined} ON {on}: reads only {side}, so it does not link {joined} to the rest"


def _name(source: exp.Expression | None) -> str | None:
    """The name a FROM or JOIN source is referred to by (its alias, else its table name),
    lower-cased; None for a source it cannot tell (a subquery without alias)."""
    if source is None:
        return None
    alias = source.alias
    if alias:
        return alias.lower()
    if isinstance(source, exp.Table):
        return source.name.lower()
    return None
