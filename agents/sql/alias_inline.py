"""A SELECT alias used where the database does not read aliases, written out in full.

Small models name an expression in the SELECT list and use the name again where the
database cannot see it: in a window's ``PARTITION BY`` or ``ORDER BY`` on SQLite (AutoFin's
long-form discount question: ``CASE ... END AS discount_band, ... SUM(units) OVER (PARTITION
BY discount_band ...)`` failed with "no such column: discount_band" and the 60 s the
question had went on the model's repairs), or in ``WHERE`` / ``HAVING`` on PostgreSQL. When
the database names the missing column and that name is an alias of the query (never a
column it reads), each unqualified reference to it outside the SELECT list (and outside
GROUP BY and the outer ORDER BY, where aliases are read) is replaced by the aliased
expression. The refine agent keeps the result only when it runs.
"""

from __future__ import annotations

import logging
import re

from sqlglot import exp

from agents.confidence.sql_shape import parse_statement
from agents.sql.default_filters import Filtered
from kb.target.sql_guard import sqlglot_dialect

log = logging.getLogger(__name__)

# what SQLite and PostgreSQL say of a name they cannot resolve
_MISSING = (
    re.compile(r"no such column: \"?([A-Za-z_][\w$.]*)\"?"),
    re.compile(r'column "([^"]+)" does not exist'),
)


def missing_column(error: str) -> str | None:
    """The unqualified column name a database error says it cannot find (None: another
    error, or a qualified name: a table's column, not an alias)."""
    for pattern in _MISSING:
        found = pattern.search(error)
        if found and "." not in found.group(1):
            return found.group(1)
    return None


def inline_alias(sql: str, name: str, dialect: str = "sqlite") -> Filtered | None:
    """``sql`` with every reference to the alias ``name`` the database could not read
    replaced by the expression it names; None when ``name`` is no alias of a SELECT of
    ``sql``, it is referenced nowhere it could be inlined, or ``sql`` does not parse."""
    dialect = sqlglot_dialect(dialect)
    tree = parse_statement(sql, dialect)
    if tree is None:  # not ours to judge: the database will say what is wrong
        return None
    wanted = name.lower()
    replaced = 0
    for select in list(tree.find_all(exp.Select)):
        aliased = {
            e.alias.lower(): e.this
            for e in select.expressions
            if isinstance(e, exp.Alias) and e.alias
        }
        if wanted not in aliased:
            continue
        definition = aliased[wanted]
        for column in list(select.find_all(exp.Column)):
            if column.table or column.name.lower() != wanted:
                continue
            if column.find_ancestor(exp.Select) is not select or not _unreadable_alias(
                column, select
            ):
                continue
            column.replace(exp.paren(definition.copy()))
            replaced += 1
    if not replaced:
        return None
    try:
        rewritten = tree.sql(dialect=dialect)
    except Exception as exc:
        log.debug("alias inline not written back for %r: %s", sql[:200], exc)
        return None
    return Filtered(rewritten, [f"alias written out: {name} ({replaced} references)"])


def _unreadable_alias(column: exp.Column, select: exp.Select) -> bool:
    """Whether ``column`` stands where an alias of ``select`` is not read: in the SELECT
    list (another item's expression), a window, WHERE, HAVING or a join; aliases are read
    in GROUP BY and the query's ORDER BY (a window's ORDER BY is not the query's)."""
    node: exp.Expression | None = column
    while node is not None and node.parent is not select:
        if isinstance(node, exp.Window):
            return True  # inside a window spec (or its function): no alias there
        node = node.parent
    if node is None:
        return False
    key = node.arg_key
    if key in ("group", "order"):
        return False
    return key in ("expressions", "where", "having", "joins", "qualify")
