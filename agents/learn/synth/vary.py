"""Vary values: a literal the query compares a column with, swapped for another profiled
value of the same column (``country = 'France'`` → ``country = 'Netherlands'``).

Only columns with profiled enum values vary (the catalog says which values exist); the
alternatives are taken most frequent first, and the column is found through the query's
aliases (an unqualified column through the one table of its SELECT that has it). SQLite's
and MySQL's double-quoted strings (Spider's ``country = "France"``) are read as strings, as
:mod:`agents.learn.mine.sql_facts` reads them.
"""

from __future__ import annotations

from sqlglot import expressions as exp

from agents.learn.synth.variants import SynthSchema, Variant, column_table, literal, parse

ALTERNATIVES = 2
"""Other values tried per literal."""
_COMPARED = (exp.EQ, exp.NEQ, exp.In)


def vary(sql: str, schema: SynthSchema) -> list[Variant]:
    """The variants of ``sql`` with one compared literal swapped (module docstring)."""
    tree = parse(sql, schema.dialect)
    if tree is None:
        return []
    variants: dict[str, Variant] = {}
    for index, (column, value) in enumerate(_compared(tree)):
        table = column_table(column, schema)
        if table is None or value is None:
            continue
        current = str(value.this).casefold()
        others = [
            v
            for v in schema.enum_values(table, column.name)
            if str(v).casefold() != current and isinstance(v, str) == value.is_string
        ]
        for other in others[:ALTERNATIVES]:
            edited = tree.copy()
            _, target = _compared(edited)[index]
            assert target is not None
            target.replace(literal(other))
            text = edited.sql(dialect=schema.dialect)
            new = literal(other).sql()
            change = f"the value {value.sql()} of {table}.{column.name} replaced by {new}"
            detail = {"table": table, "column": column.name, "from": value.this, "to": other}
            variants.setdefault(text, Variant("vary", text, change, sql, detail))
    return list(variants.values())


def _compared(tree: exp.Expression) -> list[tuple[exp.Column, exp.Literal | None]]:
    """(column, literal) of every comparison of a column with literals, in walk order (an
    ``IN`` list gives one pair per literal)."""
    found: list[tuple[exp.Column, exp.Literal | None]] = []
    for node in tree.find_all(*_COMPARED):
        column = node.this
        if not isinstance(column, exp.Column):
            continue
        operands = node.expressions if isinstance(node, exp.In) else [node.expression]
        for operand in operands:
            found.append((column, operand if isinstance(operand, exp.Literal) else None))
    return found
