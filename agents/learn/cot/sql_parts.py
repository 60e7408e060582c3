"""The parts of one SQL statement an explanation is checked against.

:func:`read_sql` parses a statement once: the facts of
:func:`agents.learn.mine.sql_facts.sql_facts` (tables, columns, joins, grouping, ordering),
and from the same parse what those facts do not keep: every name (aliases, output names,
CTEs), the functions called, the string and number literals (``LIMIT`` included), each
atomic ``WHERE``/``HAVING`` condition that is not a join (with its own columns and
literals), each aggregate and each ordering term.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import expressions as exp
from sqlglot.errors import SqlglotError

from agents.learn.mine.sql_facts import QUOTED_STRING_DIALECTS, SqlFacts, SqlFactsError, sql_facts
from kb.target.sql_guard import sqlglot_dialect


class CotCheckError(ValueError):
    """The SQL to check an explanation against does not parse; carries the SQL."""

    def __init__(self, sql: str, problem: str) -> None:
        super().__init__(f"cannot check an explanation of this SQL ({problem}): {sql[:300]!r}")
        self.sql = sql


@dataclass
class SqlParts:
    """What the checker needs of one statement (see the module docstring)."""

    facts: SqlFacts
    names: set[str]
    functions: set[str]
    strings: set[str]
    numbers: set[str]
    filters: list[tuple[str, list[str], list[str | float | int]]]
    aggregates: list[tuple[str, str, list[str]]]
    ordering: list[tuple[str, list[str], str | None]]


def read_sql(sql: str, dialect: str = "sqlite") -> SqlParts:
    """Parse ``sql`` once for :func:`agents.learn.cot.check.check_cot`
    (:class:`CotCheckError` if it does not)."""
    dialect = sqlglot_dialect(dialect)
    try:
        facts = sql_facts(sql, dialect)
        tree = sqlglot.parse_one(sql, read=dialect)
    except (SqlFactsError, SqlglotError) as exc:
        raise CotCheckError(sql, str(exc).splitlines()[0]) from None
    assert tree is not None
    quoted_strings = dialect in QUOTED_STRING_DIALECTS
    names = {t.lower() for t in facts.tables} | {c.lower() for _, c in facts.columns}
    names |= {t.alias.lower() for t in tree.find_all(exp.Table) if t.alias}
    names |= {a.alias.lower() for a in tree.find_all(exp.Alias) if a.alias}
    names |= {q.alias.lower() for q in tree.find_all(exp.Subquery) if q.alias}
    names |= {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    functions = {f.sql_name().lower() for f in tree.find_all(exp.Func)}
    strings: set[str] = set()
    numbers: set[str] = set()
    for literal in tree.find_all(exp.Literal):
        text = str(literal.this)
        (strings if literal.is_string else numbers).add(text.lower())
        if literal.is_string and is_number(text):
            numbers.add(number_text(text))
        if not literal.is_string:
            numbers.add(number_text(text))
    if quoted_strings:  # col = "text" is a string there (sql_facts reads it so)
        strings |= {str(p.values[0]).lower() for p in facts.predicates if p.is_text}
    return SqlParts(
        facts=facts,
        names=names,
        functions=functions,
        strings={s.strip("%").lower() for s in strings},
        numbers=numbers,
        filters=_filters(tree, facts, quoted_strings),
        aggregates=_aggregates(tree),
        ordering=_ordering(tree),
    )


def is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def number_text(text: str) -> str:
    value = float(text)
    return str(int(value)) if value.is_integer() else repr(value)


def _filters(
    tree: exp.Expression, facts: SqlFacts, quoted_strings: bool
) -> list[tuple[str, list[str], list[str | float | int]]]:
    """Each atomic WHERE/HAVING condition that is not a join: (its SQL, its own columns,
    its own literals)."""
    joins = {(j.left_column, j.right_column) for j in facts.joins}
    joins |= {(b, a) for a, b in joins}
    found: list[tuple[str, list[str], list[str | float | int]]] = []
    for clause in [*tree.find_all(exp.Where), *tree.find_all(exp.Having)]:
        for atom in _atoms(clause.this):
            own = [
                c
                for c in atom.find_all(exp.Column)
                if c.find_ancestor(exp.Subquery, exp.Select) is atom.find_ancestor(exp.Select)
            ]
            if (
                isinstance(atom, exp.EQ)
                and len(own) == 2
                and all(isinstance(side, exp.Column) for side in (atom.this, atom.expression))
                and (own[0].name.lower(), own[1].name.lower()) in joins
            ):
                continue
            literals: list[str | float | int] = []
            for literal in atom.find_all(exp.Literal):
                if literal.find_ancestor(exp.Select) is atom.find_ancestor(exp.Select):
                    literals.append(str(literal.this) if literal.is_string else literal.this)
            columns = []
            for column in own:
                if quoted_strings and column.this.quoted and not column.table:
                    literals.append(column.name)  # col = "text": a string (sql_facts)
                else:
                    columns.append(column.name)
            found.append((atom.sql(), list(dict.fromkeys(columns)), literals))
    return found


def _atoms(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, exp.Paren | exp.Not):
        return _atoms(node.this)
    if isinstance(node, exp.And | exp.Or):
        return [*_atoms(node.this), *_atoms(node.expression)]
    return [node]


def _aggregates(tree: exp.Expression) -> list[tuple[str, str, list[str]]]:
    found: dict[str, tuple[str, str, list[str]]] = {}
    for node in tree.find_all(exp.AggFunc):
        name = node.key.lower()
        columns = list(dict.fromkeys(c.name for c in node.find_all(exp.Column)))
        found.setdefault(node.sql(), (node.sql(), name, columns))
    return list(found.values())


def _ordering(tree: exp.Expression) -> list[tuple[str, list[str], str | None]]:
    found: list[tuple[str, list[str], str | None]] = []
    for ordered in tree.find_all(exp.Ordered):
        inner = ordered.this
        aggregate = inner.key.lower() if isinstance(inner, exp.AggFunc) else None
        columns = list(dict.fromkeys(c.name for c in inner.find_all(exp.Column)))
        found.append((inner.sql(), columns, aggregate))
    return found
