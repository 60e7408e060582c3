"""Whether the answered SQL uses what the question named: the column values and the filters
that the knowledge base links to the question's phrases.

A small model's wrong answers mostly run and return a plausible number: a filter the question
asked for is left out ("revenue" without ``report_item_level1 = 'Revenue'``), or a model's
nickname is looked up in another brand's table. Both show in the evidence: a phrase of the
question linked to a column value (an enum entry) or to a metric or predicate whose condition
holds a literal, and an SQL that neither holds the literal nor reads the value's table.

Features (:func:`knowledge_use`; all left out when the SQL does not parse):

- ``linked_values``: phrases of the question linked to column values (each phrase once; the
  links :func:`agents.rag.hint_links.precise_links` keeps);
- ``linked_values_unused``: of those, phrases none of whose values is a literal of the SQL;
- ``linked_values_elsewhere``: phrases none of whose values' tables the SQL reads;
- ``linked_filters``: phrases linked to a metric or predicate whose condition quotes a value;
- ``linked_filters_unused``: of those, phrases with a quoted value the SQL does not hold
  ("retail" is ``channel IN ('Retail Store', 'Kiosk')``: both must be there).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import sqlglot
from sqlglot import exp

from agents.rag.agent import RagContext
from agents.rag.hint_links import precise_links
from indices.evidence import EvidenceItem
from kb.target.sql_guard import sqlglot_dialect

FILTER_TYPES = ("metric", "predicate")
_QUOTED = re.compile(r"'((?:[^']|'')+)'")
Span = tuple[tuple[int, int], ...]


def knowledge_use(rag: RagContext, sql: str, dialect: str = "sqlite") -> dict[str, float]:
    """The features above for ``sql``, the answer to ``rag``'s question."""
    parsed = _parsed(sql, dialect)
    if parsed is None:
        return {}
    literals, tables = parsed
    items = [*rag.evidence.items, *rag.evidence.dropped]
    values: dict[Span, list[EvidenceItem]] = {}
    for item in precise_links(items):
        if item.entry.type == "enum":
            values.setdefault(tuple(item.spans), []).append(item)
    filters: dict[Span, set[str]] = {}
    for item in items:
        if item.entry.type in FILTER_TYPES and item.spans:
            quoted = _quoted(item)
            if quoted:
                filters.setdefault(tuple(item.spans), set()).update(quoted)
    unused = [
        span for span, group in values.items() if not any(_used(_value(i), literals) for i in group)
    ]
    elsewhere = [span for span, group in values.items() if not {_table(i) for i in group} & tables]
    return {
        "linked_values": float(len(values)),
        "linked_values_unused": float(len(unused)),
        "linked_values_elsewhere": float(len(elsewhere)),
        "linked_filters": float(len(filters)),
        "linked_filters_unused": float(
            sum(not all(_used(q, literals) for q in quoted) for quoted in filters.values())
        ),
    }


def _parsed(sql: str, dialect: str) -> tuple[set[str], set[str]] | None:
    """The SQL's literals and the tables it reads, lowercased (None when it does not parse)."""
    try:
        tree = sqlglot.parse_one(sql, read=sqlglot_dialect(dialect))
    except (sqlglot.errors.SqlglotError, ValueError):
        return None
    if tree is None:
        return None
    literals = {str(node.this).strip().lower() for node in tree.find_all(exp.Literal)}
    tables = {node.name.lower() for node in tree.find_all(exp.Table) if node.name}
    return literals, tables


def _used(value: str, literals: Iterable[str]) -> bool:
    """``value`` is one of the literals, or inside a LIKE pattern's literal."""
    value = value.strip().lower()
    if not value:
        return False
    return any(literal == value or ("%" in literal and value in literal) for literal in literals)


def _value(item: EvidenceItem) -> str:
    return str(item.entry.content_resources.get("value", ""))


def _table(item: EvidenceItem) -> str:
    return str(item.entry.content_resources.get("table", "")).lower()


def _quoted(item: EvidenceItem) -> set[str]:
    """The values a metric's formula or a predicate's condition quotes."""
    resources = item.entry.content_resources
    text = str(resources.get("formula") or resources.get("condition") or "")
    return {match.replace("''", "'") for match in _QUOTED.findall(text)}
