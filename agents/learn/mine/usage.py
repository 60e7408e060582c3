"""Does a question say a mined entry's phrase, and does its SQL use what the entry names?

The same judgment serves the miner (the evidence of the experiences mined: see
:mod:`agents.learn.mine.evidence`) and the bench's offline precision audit
(``bench/mine_precision.py``, on held-out gold SQL). :func:`element_of` reads what a mined
entry points to as an :data:`Element`; :class:`SqlUse` reads what one labeled question uses
(its tables, its columns with their tables resolved against the profile, its values, its
comparisons, the columns it joins or links by a subquery) and its lemmas.

Elements:

- ``("table", t)``; ``("column", t, c)``; ``("value", t, c, v)`` (``v`` case-folded);
- ``("threshold", t, c, op, v)``: a comparison with a constant ("major cities");
- ``("columns", "t.c", ...)``: every column of a formula (a metric);
- ``("join", t1, c1, t2, c2)``: two columns joined (or linked by ``IN (SELECT ...)``).
"""

from __future__ import annotations

from agents.learn.mine.schema_view import SchemaView
from agents.learn.mine.sql_facts import JoinFact, SqlFacts, SqlFactsError, sql_facts
from indices.normalize import Lemmatizer, tokenize
from ukf import BaseUKF

Element = tuple[str, ...]
VALUE_OPS = ("=", "IN", "LIKE")


def lemmas_of(text: str, lemmatizer: Lemmatizer | None = None) -> tuple[str, ...]:
    return tuple(t.lemma for t in tokenize(text, lemmatizer))


def says(question: tuple[str, ...], phrase: tuple[str, ...]) -> bool:
    """Whether the lemmas ``phrase`` occur together in the lemmas ``question``."""
    n = len(phrase)
    return n > 0 and any(question[i : i + n] == phrase for i in range(len(question) - n + 1))


def join_key(join: JoinFact) -> frozenset[tuple[str, str]]:
    pair = {(join.left.casefold(), join.left_column.casefold())}
    pair.add((join.right.casefold(), join.right_column.casefold()))
    return frozenset(pair)


class SqlUse:
    """What one question and its SQL use; ``parsed`` is False when the SQL does not parse."""

    def __init__(
        self,
        question: str,
        sql: str,
        view: SchemaView,
        lemmatizer: Lemmatizer | None = None,
        *,
        dialect: str = "sqlite",
    ) -> None:
        self.question = question
        self.lemmas = lemmas_of(question, lemmatizer)
        self.tables: set[str] = set()
        self.columns: set[tuple[str, str]] = set()
        self.values: set[tuple[str, str, str]] = set()
        self.comparisons: set[tuple[str, str, str, str]] = set()
        self.joins: set[frozenset[tuple[str, str]]] = set()
        try:
            facts = sql_facts(sql, dialect)
        except SqlFactsError:
            self.parsed = False
            return
        self.parsed = True
        self.tables = {t.casefold() for t in facts.tables}
        self.columns = {_resolve(view, facts, ref) for ref in facts.columns}
        for pred in facts.predicates:
            table, column = _resolve(view, facts, (pred.table, pred.column))
            for value in pred.values:
                if pred.op in VALUE_OPS:
                    self.values.add((table, column, str(value).casefold()))
                self.comparisons.add((table, column, pred.op, str(value)))
        self.joins = {join_key(j) for j in [*facts.joins, *facts.links]}

    def says(self, phrase: tuple[str, ...]) -> bool:
        return says(self.lemmas, phrase)

    def links(self, left: str, right: str) -> bool:
        """Whether the SQL joins (or links) tables ``left`` and ``right`` directly."""
        return any({t for t, _ in pair} == {left, right} for pair in self.joins)

    def uses(self, element: Element) -> bool:
        kind, *rest = element
        if kind == "table":
            return rest[0] in self.tables
        if kind == "column":
            return (rest[0], rest[1]) in self.columns
        if kind == "value":
            return (rest[0], rest[1], rest[2]) in self.values
        if kind == "threshold":  # the same constant, either way ("not major cities": <=)
            return any(c[:2] == (rest[0], rest[1]) and c[3] == rest[3] for c in self.comparisons)
        if kind == "columns":
            return all(tuple(c.split(".", 1)) in self.columns for c in rest)
        if kind == "join":
            return frozenset({(rest[0], rest[1]), (rest[2], rest[3])}) in self.joins
        raise ValueError(f"unknown element {element!r}")

    def judge(self, element: Element, phrase: tuple[str, ...]) -> bool | None:
        """True: this question supports the entry; False: it speaks against it; None: it
        says nothing about it (a phrase entry: the question lacks the phrase; a join: the
        SQL does not join its two tables directly)."""
        if element[0] == "join":
            return self.uses(element) if self.links(element[1], element[3]) else None
        if not self.says(phrase):
            return None
        return self.uses(element)


def _resolve(view: SchemaView, facts: SqlFacts, ref: tuple[str | None, str]) -> tuple[str, str]:
    table, column = ref
    if table is None:
        found = view.column(None, column, among=facts.tables)
        table = str(found.content_resources["table"]) if found is not None else "?"
    return table.casefold(), column.casefold()


def kind_of(entry: BaseUKF) -> str:
    """``column_synonym``, ``table_synonym``, ``value_synonym``, ``predicate``, ``metric``,
    ``join``, ``period`` / ``relative_period``, ``comparison``, ``preference`` or
    ``template``."""
    r = entry.content_resources
    if isinstance(r.get("period"), dict):
        return "relative_period" if r["period"].get("relative") else "period"
    if isinstance(r.get("comparison"), dict):
        return "comparison"
    if isinstance(r.get("preference"), dict):
        return "preference"
    if entry.type == "synonym":
        if r.get("value") is not None:
            return "value_synonym"
        return "column_synonym" if r.get("column") else "table_synonym"
    if entry.type == "knowledge" and r.get("kind") in ("join", "template"):
        return str(r["kind"])
    return entry.type


def element_of(entry: BaseUKF, columns: dict[str, tuple[str, str]]) -> Element | None:
    """What a mined entry points to (``columns``: column entry id → (table, column)); None
    for an entry the audit cannot read (a period, a preference)."""
    r = entry.content_resources
    kind = kind_of(entry)
    if kind == "join":
        return (
            "join",
            *_low(r["left_table"], r["left_columns"][0]),
            *_low(r["right_table"], r["right_columns"][0]),
        )
    if kind == "table_synonym":
        return ("table", str(r["table"]).casefold())
    if kind == "column_synonym":
        return ("column", *_low(r["table"], r["column"]))
    if kind == "value_synonym":
        return ("value", *_low(r["table"], r["column"]), str(r["value"]).casefold())
    if kind == "comparison":
        c = r["comparison"]
        table, column = str(c["column"]).casefold().split(".", 1)
        if "value" in c:
            return ("threshold", table, column, str(c["op"]), str(c["value"]))
        return ("column", table, column)
    used = [columns[rel.object] for rel in entry.related if rel.object in columns]
    if kind == "predicate" and used and "period" not in r:
        try:
            preds = sql_facts(f"SELECT 1 FROM {used[0][0]} WHERE {r['condition']}").predicates
        except SqlFactsError:
            return None
        if preds and preds[0].op in VALUE_OPS and preds[0].values:
            return ("value", *used[0], str(preds[0].values[0]).casefold())
        return ("column", *used[0])
    if kind == "metric" and used:
        return ("columns", *(f"{t}.{c}" for t, c in used))
    return None


def _low(table: object, column: object) -> tuple[str, str]:
    return str(table).casefold(), str(column).casefold()
