"""Whether the answered SQL keeps the filters the question names through the knowledge base.

A small model's wrong answers mostly run and return a plausible number, and the commonest
cause is a filter the question asked for and the SQL left out: "revenue" is the metric
``SUM(<amount>) WHERE report_item_level1 = 'Revenue'``, "retail" the predicate
``channel IN ('Retail Store', 'Kiosk')``, and the SQL sums every report item or every
channel. Both show in the evidence: a phrase of the question linked to a metric or predicate
whose formula or condition quotes values, and an SQL without one of those values.

Features (:func:`knowledge_use`; left out when the SQL does not parse):

- ``linked_filters``: phrases of the question linked to a metric or predicate whose formula
  or condition quotes a value (each phrase once);
- ``linked_filters_unused``: of those, phrases with a quoted value the SQL does not hold
  (the retail predicate needs both 'Retail Store' and 'Kiosk'; inside a LIKE pattern counts).

Phrases linked to column values (enum entries) are not counted: on the bench's greedy answers
(1.5B: Spider 300, GeoQuery 150, AutoFin 60) a value the SQL leaves out, or whose table it
does not read, was as common in right answers as in wrong ones (a brand's name picks its
table, not a filter), and those features lowered the cross-fitted AUROC; the filter features
raised AutoFin's from 0.775 to 0.825 (docs/benchmarks.md, Confidence).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from sqlglot import exp

from agents.confidence.sql_shape import parse_statement
from agents.rag.agent import RagContext
from indices.evidence import EvidenceItem

FILTER_TYPES = ("metric", "predicate")
_QUOTED = re.compile(r"'((?:[^']|'')+)'")


def knowledge_use(
    rag: RagContext, sql: str, dialect: str = "sqlite", *, tree: exp.Expression | None = None
) -> dict[str, float]:
    """The features above for ``sql``, the answer to ``rag``'s question (``tree``: ``sql``
    already parsed)."""
    if tree is None:
        tree = parse_statement(sql, dialect)
    if tree is None:
        return {}
    literals = {str(node.this).strip().lower() for node in tree.find_all(exp.Literal)}
    filters: dict[tuple[tuple[int, int], ...], set[str]] = {}
    for item in [*rag.evidence.items, *rag.evidence.dropped]:
        if item.entry.type in FILTER_TYPES and item.spans:
            quoted = _quoted(item)
            if quoted:
                filters.setdefault(tuple(item.spans), set()).update(quoted)
    unused = [quoted for quoted in filters.values() if not all(_used(q, literals) for q in quoted)]
    return {"linked_filters": float(len(filters)), "linked_filters_unused": float(len(unused))}


def _used(value: str, literals: Iterable[str]) -> bool:
    """``value`` is one of the literals, or inside a LIKE pattern's literal."""
    value = value.strip().lower()
    return bool(value) and any(
        literal == value or ("%" in literal and value in literal) for literal in literals
    )


def _quoted(item: EvidenceItem) -> set[str]:
    """The values a metric's formula or a predicate's condition quotes."""
    resources = item.entry.content_resources
    text = str(resources.get("formula") or resources.get("condition") or "")
    return {match.replace("''", "'") for match in _QUOTED.findall(text)}
