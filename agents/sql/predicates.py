"""Predicate checks: do the literal values a query filters on exist in the profiled enums?

Wrong predicate values ("france" for 'France', "USA" for 'United States') are the largest
class of errors in RubikSQL's analysis. ``PredicateChecker.check(sql)`` finds comparisons of a
categorical column with a string literal (``=``, ``!=``, ``IN``), looks the literal up among
the column's profiled values and their synonyms, and proposes the stored value: exactly
when only case or spacing differ or a synonym matches, by spelling similarity otherwise.
``apply`` rewrites the literals it can fix with certainty.
"""

from __future__ import annotations

import difflib
import logging
import threading
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

from agents.rag.store_watch import StoreWatch
from kb.store import KnowledgeStore
from kb.target.sql_guard import sqlglot_dialect

log = logging.getLogger(__name__)


@dataclass
class PredicateIssue:
    """A literal that is not a stored value of its column."""

    table: str
    column: str
    literal: str
    suggestions: list[str] = field(default_factory=list)
    certain: bool = False  # the first suggestion is the same value (case, synonym)

    def describe(self) -> str:
        where = f"{self.table}.{self.column}"
        if not self.suggestions:
            return f"'{self.literal}' is not a value of {where}"
        shown = ", ".join(f"'{s}'" for s in self.suggestions)
        return f"'{self.literal}' is not a value of {where}; stored values close to it: {shown}"


class PredicateChecker:
    """Checks string literals against the profiled values of ``database`` in ``store``."""

    def __init__(self, store: KnowledgeStore, database: str, dialect: str = "sqlite") -> None:
        self.store, self.database = store, database
        self.dialect = sqlglot_dialect(dialect)
        self._values: dict[tuple[str, str], dict[str, str]] = {}
        self._columns: dict[str, set[str]] = {}
        self._watch = StoreWatch(store, ("enum", "column"), database)
        self._lock = threading.Lock()

    def check(self, sql: str) -> list[PredicateIssue]:
        """Issues with the string literals of ``sql`` (empty when all are stored values)."""
        values = self._load()
        try:
            tree = sqlglot.parse_one(sql, read=self.dialect)
        except sqlglot.errors.ParseError:
            return []
        aliases = {t.alias_or_name.lower(): t.name.lower() for t in tree.find_all(exp.Table)}
        tables = sorted(set(aliases.values()))
        issues: list[PredicateIssue] = []
        for column, literal in _comparisons(tree):
            table = self._table_of(column, aliases, tables)
            if table is None:
                continue
            stored = values.get((table, column.name.lower()))
            if not stored or literal in stored.values():
                continue
            issues.append(_issue(table, column.name, literal, stored))
        return issues

    def apply(self, sql: str, issues: list[PredicateIssue]) -> str | None:
        """``sql`` with every certain issue's literal replaced; None if none is certain."""
        fixes = {(i.column.lower(), i.literal): i.suggestions[0] for i in issues if i.certain}
        if not fixes:
            return None
        tree = sqlglot.parse_one(sql, read=self.dialect)
        changed = False
        for node in tree.find_all(exp.EQ, exp.NEQ, exp.In):
            column = node.this if isinstance(node.this, exp.Column) else None
            if column is None:
                continue
            for literal in _string_literals(node):
                fix = fixes.get((column.name.lower(), literal.this))
                if fix is not None:
                    literal.replace(exp.Literal.string(fix))
                    changed = True
        return tree.sql(dialect=self.dialect) if changed else None

    def _table_of(
        self, column: exp.Column, aliases: dict[str, str], tables: list[str]
    ) -> str | None:
        if column.table:
            return aliases.get(column.table.lower())
        owners = [t for t in tables if column.name.lower() in self._columns.get(t, set())]
        return owners[0] if len(owners) == 1 else None

    def _load(self) -> dict[tuple[str, str], dict[str, str]]:
        with self._lock:
            if not self._watch.changed():
                return self._values
            values: dict[tuple[str, str], dict[str, str]] = {}
            columns: dict[str, set[str]] = {}
            for entry in self.store.iterate(type="enum"):
                r = entry.content_resources
                if r.get("database") != self.database or not isinstance(r.get("value"), str):
                    continue
                key = (str(r["table"]).lower(), str(r["column"]).lower())
                known = values.setdefault(key, {})
                known[_norm(r["value"])] = r["value"]
                for synonym in entry.synonyms:
                    known.setdefault(_norm(synonym), r["value"])
            self._add_synonym_entries(values)
            for entry in self.store.iterate(type="column"):
                r = entry.content_resources
                if r.get("database") == self.database:
                    columns.setdefault(str(r["table"]).lower(), set()).add(str(r["column"]).lower())
            self._values, self._columns = values, columns
            return values

    def _add_synonym_entries(self, values: dict[tuple[str, str], dict[str, str]]) -> None:
        """Synonym entries of a stored value ("Deneb" means model_code 'VGS') name it in
        every column holding that value, not only in the column their target lives in."""
        holding: dict[str, list[dict[str, str]]] = {}
        for known in values.values():
            for stored in set(known.values()):
                holding.setdefault(stored, []).append(known)
        tag = f"[DATABASE:{self.database}]"
        for entry in self.store.iterate(type="synonym"):
            value = entry.content_resources.get("value")
            if tag not in entry.tags or not isinstance(value, str):
                continue
            for known in holding.get(value, []):
                known.setdefault(_norm(entry.name), value)


def _comparisons(tree: exp.Expression) -> list[tuple[exp.Column, str]]:
    found = []
    for node in tree.find_all(exp.EQ, exp.NEQ, exp.In):
        left, right = node.this, node.args.get("expression")
        if isinstance(right, exp.Column) and isinstance(left, exp.Literal):
            left, right = right, left
        if not isinstance(left, exp.Column):
            continue
        found.extend((left, lit.this) for lit in _string_literals(node))
    return found


def _string_literals(node: exp.Expression) -> list[exp.Literal]:
    candidates = [node.args.get("expression"), node.this, *(node.args.get("expressions") or [])]
    return [c for c in candidates if isinstance(c, exp.Literal) and c.is_string]


def _issue(table: str, column: str, literal: str, stored: dict[str, str]) -> PredicateIssue:
    same = stored.get(_norm(literal))
    if same is not None:
        return PredicateIssue(table, column, literal, [same], certain=True)
    close = difflib.get_close_matches(_norm(literal), list(stored), n=3, cutoff=0.6)
    suggestions = list(dict.fromkeys(stored[c] for c in close))
    return PredicateIssue(table, column, literal, suggestions)


def _norm(text: str) -> str:
    return " ".join(str(text).lower().split())
