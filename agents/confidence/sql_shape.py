"""How complex the answered SQL is: the parts a harder query has (Spider's hardness counts
the same parts). A small model is right less often on a query that joins four tables under a
nested subquery than on a one-table count, so these are confidence signals too."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from kb.target.sql_guard import sqlglot_dialect


def parse_statement(sql: str, dialect: str = "sqlite") -> exp.Expression | None:
    """``sql`` parsed in ``dialect``; None when it does not parse (the answer's signals parse
    the winner once and hand the tree to each feature that reads it)."""
    try:
        return sqlglot.parse_one(sql, read=sqlglot_dialect(dialect))
    except (sqlglot.errors.SqlglotError, ValueError):
        return None


def sql_shape(
    sql: str, dialect: str = "sqlite", *, tree: exp.Expression | None = None
) -> dict[str, float]:
    """Counts of the query's parts (empty when it does not parse):

    ``sql_tables`` (table references), ``sql_nesting`` (subqueries), ``sql_set_ops`` (UNION,
    INTERSECT, EXCEPT), ``sql_conditions`` (comparisons, IN, LIKE, BETWEEN), ``sql_aggregates``,
    ``sql_clauses`` (GROUP BY, HAVING, ORDER BY, LIMIT present) and ``sql_length`` (tokens of
    the statement, in hundreds). ``tree``: ``sql`` already parsed.
    """
    if tree is None:
        tree = parse_statement(sql, dialect)
    if tree is None:
        return {}
    conditions = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.In, exp.Like, exp.Between)
    clauses = sum(
        1
        for select in tree.find_all(exp.Select)
        for key in ("group", "having", "order", "limit")
        if select.args.get(key) is not None
    )
    return {
        "sql_tables": float(len(list(tree.find_all(exp.Table)))),
        "sql_nesting": float(len(list(tree.find_all(exp.Subquery)))),
        "sql_set_ops": float(len(list(tree.find_all(exp.Union, exp.Intersect, exp.Except)))),
        "sql_conditions": float(len(list(tree.find_all(*conditions)))),
        "sql_aggregates": float(len(list(tree.find_all(exp.AggFunc)))),
        "sql_clauses": float(clauses),
        "sql_length": len(sql.split()) / 100.0,
    }
