"""SQL skeletons: a query with its literal values replaced by ``?`` and its text normalised.

Two questions whose gold SQL shares a skeleton need the same query shape, so a retrieved
experience with the same skeleton is a usable few-shot example.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp


def sql_skeleton(sql: str, dialect: str = "sqlite") -> str:
    """Literal-free, lower-cased SQL; falls back to the stripped text when unparsable."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except sqlglot.errors.SqlglotError:
        return " ".join(sql.lower().split())
    hollow = tree.transform(
        lambda node: exp.Placeholder() if isinstance(node, exp.Literal) else node
    )
    return hollow.sql(dialect=dialect).lower()
