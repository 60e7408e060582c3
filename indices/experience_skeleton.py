"""SQL skeletons: a query with its literal values replaced by ``?`` and its text normalised.

Two questions whose SQL shares a skeleton need the same query shape, so an experience with the
same skeleton is a usable few-shot example. The experience index groups labeled experiences by
skeleton to learn which differences between questions matter (:mod:`indices.experience_metric`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import sqlglot
from sqlglot import exp

from kb.target.sql_guard import sqlglot_dialect

if TYPE_CHECKING:
    from ukf import BaseUKF


def sql_skeleton(sql: str, dialect: str | None = "sqlite") -> str:
    """Literal-free, lower-cased SQL; falls back to the stripped text when unparsable.

    ``dialect`` is a SQLAlchemy backend name ("postgresql") or a sqlglot one; an unknown
    dialect is read as generic SQL.
    """
    dialect = sqlglot_dialect(dialect) if dialect else None
    tree: exp.Expression | None
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except ValueError:  # an unknown dialect
        dialect = None
        tree = _parse_generic(sql)
    except sqlglot.errors.SqlglotError:
        return " ".join(sql.lower().split())
    if tree is None:
        return " ".join(sql.lower().split())
    hollow = tree.transform(
        lambda node: exp.Placeholder() if isinstance(node, exp.Literal) else node
    )
    return hollow.sql().lower()  # written as generic SQL: one skeleton across dialects


def _parse_generic(sql: str) -> exp.Expression | None:
    try:
        return sqlglot.parse_one(sql)
    except sqlglot.errors.SqlglotError:
        return None


def skeleton_of(entry: BaseUKF) -> str | None:
    """The SQL skeleton of a labeled (or verified) experience; None for any other entry."""
    res = entry.content_resources
    sql = res.get("sql")
    if entry.type != "experience" or not (res.get("labeled") or res.get("verified")):
        return None
    if not isinstance(sql, str) or not sql.strip():
        return None
    return sql_skeleton(sql, res.get("dialect") or "sqlite")
