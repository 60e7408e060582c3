"""Decompose: the parts of a nested or multi-part query that stand alone.

Each side of a ``UNION``, ``INTERSECT`` or ``EXCEPT``, each subquery (``IN (SELECT ...)``, a
scalar ``(SELECT AVG(...) ...)``, a derived table) and each common table expression is a
query of its own. A part that refers to its enclosing query (a correlated subquery) does not
run alone: the synthesizer drops it when it fails. A part equal to the whole is no part.
"""

from __future__ import annotations

from sqlglot import expressions as exp

from agents.learn.synth.variants import SynthSchema, Variant, parse, sql_key

_SET_OPERATIONS = {exp.Union: "UNION", exp.Intersect: "INTERSECT", exp.Except: "EXCEPT"}


def decompose(sql: str, schema: SynthSchema) -> list[Variant]:
    """The standalone parts of ``sql`` (see the module docstring), outermost first."""
    tree = parse(sql, schema.dialect)
    if tree is None:
        return []
    whole = sql_key(sql, schema.dialect)
    variants: dict[str, Variant] = {}
    for part, change in _parts(tree):
        text = part.sql(dialect=schema.dialect)
        if sql_key(text, schema.dialect) != whole:
            variants.setdefault(text, Variant("decompose", text, change, sql))
    return list(variants.values())


def _parts(tree: exp.Expression) -> list[tuple[exp.Query, str]]:
    found: list[tuple[exp.Query, str]] = []
    for node in tree.walk():
        kind = _SET_OPERATIONS.get(type(node))
        if kind is not None:
            assert isinstance(node, exp.SetOperation)
            for side, name in ((node.this, "first"), (node.expression, "second")):
                if isinstance(side, exp.Query):
                    found.append((_standalone(side), f"only the {name} query of the {kind}"))
        elif isinstance(node, exp.Subquery) and isinstance(node.this, exp.Query):
            where = "derived table" if node.alias else "subquery"
            found.append((_standalone(node.this), f"only the {where} of the query, on its own"))
        elif isinstance(node, exp.CTE) and isinstance(node.this, exp.Query):
            name = node.alias_or_name
            found.append((_standalone(node.this), f"only the WITH part {name!r}, on its own"))
    return found


def _standalone(query: exp.Query) -> exp.Query:
    """A copy of ``query`` detached from its parent."""
    copy = query.copy()
    while isinstance(copy, exp.Subquery | exp.Paren):
        copy = copy.this
    return copy
