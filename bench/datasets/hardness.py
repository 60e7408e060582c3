"""Spider's hardness levels (easy / medium / hard / extra).

The official rule (``eval_hardness`` in Spider's ``evaluation.py``) counts three things on Spider's
own parse of the SQL and buckets the counts:

- component1: WHERE, GROUP BY, ORDER BY, LIMIT present (1 each), joined tables beyond the first,
  OR connectors and LIKE conditions (in join conditions, WHERE and HAVING);
- component2: nested queries used as condition values, plus one for INTERSECT / UNION / EXCEPT;
- others: more than one aggregate, more than one SELECT column, more than one WHERE condition,
  more than one GROUP BY column (1 each).

`official_hardness` applies that rule exactly to Spider's parsed ``sql`` object (shipped in
``dev.json``). `approximate_hardness` applies the same counting rules to a sqlglot parse of the SQL
text, for sources without Spider's parse; it is an approximation (Spider's parser differs in
details, e.g. how parenthesised conditions are flattened), reproducing the official code's quirks
where they matter: its aggregate count also counts negated WHERE/HAVING conditions and HAVING
connectors, because it tests the first element of those units.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import sqlglot
from sqlglot import exp

LEVELS = ("easy", "medium", "hard", "extra")
_LIKE_OP = 9  # index of "like" in Spider's WHERE_OPS
_SET_OPERATIONS = (exp.Union, exp.Intersect, exp.Except)
_QUERIES = (exp.Select, *_SET_OPERATIONS)


def classify(component1: int, component2: int, others: int) -> str:
    """Buckets Spider's three counts into a hardness level (official thresholds).

    Args:
        component1: The component-1 count.
        component2: The component-2 (nesting) count.
        others: The "others" count.

    Returns:
        One of `LEVELS`.
    """
    if component1 <= 1 and others == 0 and component2 == 0:
        return "easy"
    if (others <= 2 and component1 <= 1 and component2 == 0) or (
        component1 <= 2 and others < 2 and component2 == 0
    ):
        return "medium"
    if (
        (others > 2 and component1 <= 2 and component2 == 0)
        or (2 < component1 <= 3 and others <= 2 and component2 == 0)
        or (component1 <= 1 and others == 0 and component2 <= 1)
    ):
        return "hard"
    return "extra"


def official_hardness(parsed: dict[str, Any]) -> str:
    """Spider's hardness from Spider's own parsed SQL (the ``sql`` field of its JSON).

    Args:
        parsed: Spider's parsed SQL object.

    Returns:
        One of `LEVELS`.
    """
    clauses = (parsed["from"]["conds"], parsed["where"], parsed["having"])
    units = [unit for clause in clauses for unit in clause[::2]]
    connectors = [token for clause in clauses for token in clause[1::2]]
    component1 = sum(bool(parsed[key]) for key in ("where", "groupBy", "orderBy"))
    component1 += parsed["limit"] is not None
    component1 += max(len(parsed["from"]["table_units"]) - 1, 0)
    component1 += connectors.count("or")
    component1 += sum(unit[1] == _LIKE_OP for unit in units)

    component2 = sum(isinstance(unit[i], dict) for unit in units for i in (3, 4))
    component2 += sum(parsed[key] is not None for key in ("intersect", "except", "union"))

    def n_agg(items: list[Any]) -> int:  # the official `count_agg`: first element != 0
        return sum(item[0] != 0 for item in items)

    order_units = parsed["orderBy"][1] if parsed["orderBy"] else []
    order_cols = [u[i] for u in order_units for i in (1, 2) if u[i]]
    aggregates = n_agg(parsed["select"][1]) + n_agg(parsed["where"][::2])
    aggregates += n_agg(parsed["groupBy"]) + n_agg(order_cols) + n_agg(parsed["having"])
    others = int(aggregates > 1) + int(len(parsed["select"][1]) > 1)
    others += int(len(parsed["where"]) > 1) + int(len(parsed["groupBy"]) > 1)
    return classify(component1, component2, others)


def approximate_hardness(sql: str, dialect: str = "sqlite") -> str | None:
    """Spider's hardness computed from a sqlglot parse (see the module docstring).

    Args:
        sql: One SQL query.
        dialect: sqlglot dialect to parse it with.

    Returns:
        One of `LEVELS`, or None when sqlglot cannot parse the query.
    """
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except (sqlglot.errors.SqlglotError, ValueError):
        return None
    component2 = 0
    if isinstance(tree, _SET_OPERATIONS):
        component2 += 1
        while isinstance(tree, _SET_OPERATIONS):
            tree = tree.left
    while isinstance(tree, exp.Subquery):
        tree = tree.this
    if not isinstance(tree, exp.Select):
        return None

    joins = tree.args.get("joins") or []
    join_leaves, join_ors = _flatten([j.args["on"] for j in joins if j.args.get("on")])
    where_leaves, where_ors = _flatten([_clause(tree, "where")])
    having_leaves, having_ors = _flatten([_clause(tree, "having")])
    leaves = join_leaves + where_leaves + having_leaves
    group = _clause(tree, "group")
    group_items = group.expressions if group is not None else []
    order = _clause(tree, "order")
    has_from = (tree.args.get("from_") or tree.args.get("from")) is not None

    component1 = sum(_clause(tree, key) is not None for key in ("where", "group", "order", "limit"))
    component1 += len(joins) if has_from else 0
    component1 += join_ors + where_ors + having_ors
    component1 += sum(isinstance(_unnot(leaf), exp.Like) for leaf in leaves)
    component2 += sum(len(list(_outer_queries(leaf))) for leaf in leaves)

    aggregates = sum(_has_aggregate(item) for item in tree.expressions)
    aggregates += sum(isinstance(leaf, exp.Not) for leaf in where_leaves + having_leaves)
    aggregates += sum(_has_aggregate(item) for item in group_items)
    aggregates += sum(_has_aggregate(o) for o in (order.expressions if order else []))
    aggregates += max(len(having_leaves) - 1, 0)
    others = int(aggregates > 1) + int(len(tree.expressions) > 1)
    others += int(len(where_leaves) > 1) + int(len(group_items) > 1)
    return classify(component1, component2, others)


def _clause(select: exp.Select, key: str) -> Any:
    clause = select.args.get(key)
    return clause.this if key in ("where", "having") and clause is not None else clause


def _flatten(conditions: list[exp.Expression | None]) -> tuple[list[exp.Expression], int]:
    """Leaf conditions under AND / OR / parentheses, and the number of OR connectors."""
    leaves: list[exp.Expression] = []
    ors = 0
    stack = [c for c in reversed(conditions) if c is not None]
    while stack:
        node = stack.pop()
        if isinstance(node, exp.Paren):
            stack.append(node.this)
        elif isinstance(node, exp.And | exp.Or):
            ors += isinstance(node, exp.Or)
            stack.extend([node.expression, node.this])
        else:
            leaves.append(node)
    return leaves, ors


def _unnot(node: exp.Expression) -> exp.Expression:
    return node.this if isinstance(node, exp.Not) else node


def _outer_queries(node: exp.Expression) -> Iterator[exp.Expression]:
    """Queries inside `node` that are not themselves inside another query."""
    for child in node.iter_expressions():
        if isinstance(child, _QUERIES):
            yield child
        else:
            yield from _outer_queries(child)


def _has_aggregate(node: exp.Expression) -> bool:
    if isinstance(node, exp.AggFunc):
        return True
    return any(
        _has_aggregate(child)
        for child in node.iter_expressions()
        if not isinstance(child, _QUERIES)
    )
