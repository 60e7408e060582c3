"""What a corrected SQL says that the wrong one did not, fact by fact.

:func:`differing_facts` compares two :class:`~agents.learn.mine.sql_facts.SqlFacts` (the
wrong answer's, the correction's) as sets of keys per kind: columns read (resolved against the
profiled schema), tables, filter conditions (normalised), formulas and joins. :func:`fact_key`
gives the key a mined entry stands for, so :func:`differs` keeps only the entries mined from
the correction that stand for a differing fact (:mod:`agents.learn.mine.correction`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agents.learn.mine.labeled import kind_of
from agents.learn.mine.schema_view import SchemaView
from agents.learn.mine.sql_facts import ColumnRef, PredicateFact, SqlFacts
from ukf import BaseUKF


@dataclass
class FactDiff:
    """The facts of the corrected SQL the wrong SQL lacks (keys as :func:`fact_key` builds)."""

    columns: set[tuple[str, str]] = field(default_factory=set)
    tables: set[str] = field(default_factory=set)
    conditions: set[str] = field(default_factory=set)
    formulas: set[str] = field(default_factory=set)
    joins: set[tuple[str, str, str, str]] = field(default_factory=set)

    def __len__(self) -> int:
        parts: tuple[set[Any], ...] = (
            self.columns,
            self.tables,
            self.conditions,
            self.formulas,
            self.joins,
        )
        return sum(len(part) for part in parts)


def _column_keys(facts: SqlFacts, view: SchemaView) -> set[tuple[str, str]]:
    """Columns read for themselves: not join keys, not filtered by a text value, not inside
    a formula (those facts name them; as :func:`mine_experience` pairs them)."""
    implied: list[ColumnRef] = [(j.left, j.left_column) for j in facts.joins]
    implied += [(j.right, j.right_column) for j in facts.joins]
    implied += [(p.table, p.column) for p in facts.predicates if p.is_text]
    implied += [ref for formula in facts.formulas for ref in formula.columns]
    refs = [ref for ref in facts.columns if ref not in implied]
    found = (view.column(t, c, among=facts.tables) for t, c in refs)
    return {_ref(col) for col in found if col is not None}


def _ref(column: BaseUKF) -> tuple[str, str]:
    r = column.content_resources
    return (str(r["table"]).casefold(), str(r["column"]).casefold())


def _conditions(facts: SqlFacts, view: SchemaView) -> set[str]:
    """The text-value conditions of ``facts`` as the miner writes them (one per value)."""
    found: set[str] = set()
    for pred in facts.predicates:
        if not pred.is_text:
            continue
        column = view.column(pred.table, pred.column, among=facts.tables)
        if column is None:
            continue
        r = column.content_resources
        op = "=" if pred.op == "IN" else pred.op
        for value in map(str, pred.values):
            found.add(PredicateFact(r["table"], r["column"], op, (value,), True).condition())
    return found


def _joins(facts: SqlFacts) -> set[tuple[str, str, str, str]]:
    return {(j.left, j.left_column, j.right, j.right_column) for j in facts.joins}


def differing_facts(wrong: SqlFacts | None, right: SqlFacts, view: SchemaView) -> FactDiff:
    """What ``right`` (the corrected SQL) shows that ``wrong`` does not (all of it when the
    wrong SQL is missing or unreadable)."""
    empty = SqlFacts(sql="", dialect=right.dialect)
    wrong = wrong or empty
    return FactDiff(
        columns=_column_keys(right, view) - _column_keys(wrong, view),
        tables=set(right.tables) - set(wrong.tables),
        conditions=_conditions(right, view) - _conditions(wrong, view),
        formulas={f.sql for f in right.formulas} - {f.sql for f in wrong.formulas},
        joins=_joins(right) - _joins(wrong),
    )


def fact_key(entry: BaseUKF) -> tuple[str, Any]:
    """Which fact of the SQL a mined entry stands for (the kind, and the key in
    :class:`FactDiff` of that kind)."""
    r = entry.content_resources
    kind = kind_of(entry)
    if kind in ("value_synonym", "predicate"):
        return "conditions", r.get("target_name") if kind == "value_synonym" else r["condition"]
    if kind == "metric":
        return "formulas", r["formula"]
    if kind == "join":
        return "joins", (
            r["left_table"],
            r["left_columns"][0],
            r["right_table"],
            r["right_columns"][0],
        )
    if kind == "column_synonym":
        return "columns", (str(r["table"]).casefold(), str(r["column"]).casefold())
    return "tables", str(r.get("table", "")).casefold()


def differs(entry: BaseUKF, diff: FactDiff) -> bool:
    """Whether ``entry`` stands for a fact in ``diff``."""
    kind, key = fact_key(entry)
    return key in getattr(diff, kind)
