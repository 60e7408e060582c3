"""Which tables a question needs, best first: the schema slice shows them in this order.

Evidence scores tables: a named table (3), a named column or value (2, divided among the
tables the same phrase reaches: "units" in eight ledgers says little about each), a table
found only by search (0.1), a join path through it (1), the user profile's tables (3). Values
weigh more when they say which table (``agents.rag.value_catalog``):

- a value every row of a table holds ("Aurora" in ``income_aurora``): that table (4) and the
  tables partitioned the same way (``sales_ledger_aurora``, 2);
- a synonym of a dimension's code ("Gale" -> ``vehicle_models.model_code = 'ZP3'``): the
  other tables holding the code (4), when few do;
- a metric or rule the question names: the tables its text names (2).

Small databases are shown whole, in catalog order, so every question on them shares one
prompt prefix (a local model's prompt cache then skips re-reading it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from agents.rag.schema_slice import SchemaCatalog
from agents.rag.value_catalog import ValueCatalog, is_identity
from indices.evidence import Evidence, EvidenceItem
from ukf import BaseUKF

BUSINESS_TYPES = ("rule", "metric", "predicate", "knowledge", "taxonomy", "synonym", "document")
VALUE_MAX_TABLES = 4  # a named value held by at most this many tables points at them


class TableRanker:
    """Ranks the tables of ``catalog`` for a question's evidence, using ``values``."""

    def __init__(self, catalog: SchemaCatalog, values: ValueCatalog) -> None:
        self.catalog, self.values = catalog, values

    def rank(
        self,
        items: Sequence[EvidenceItem],
        evidence: Evidence,
        profile_tables: Sequence[str] = (),
        *,
        whole_schema_tables: int = 12,
    ) -> list[str]:
        """Table names, most relevant first (all of them, in catalog order, when the database
        has at most ``whole_schema_tables``)."""
        known = self.catalog.tables
        score: dict[str, float] = {}
        for table in profile_tables:
            if table in known:
                score[table] = score.get(table, 0.0) + 3.0
        # a phrase that names a column of many tables ("units") says little about each
        reach: dict[tuple[int, int], set[str]] = {}
        for item in items:
            for span in item.spans:
                reach.setdefault(span, set()).add(item.entry.content_resources.get("table"))
        for item in items:
            table = item.entry.content_resources.get("table")
            if named(item) and item.spans and item.entry.type in BUSINESS_TYPES:
                # a metric or rule the question names, on the tables it names ("BCR compares
                # profit_and_loss with budget_and_forecast")
                for mentioned in tables_named_in(item.entry.text(), known):
                    score[mentioned] = score.get(mentioned, 0.0) + 2.0
            if named(item):
                # tables holding the value a synonym stands for: "Gale" means model_code
                # 'ZP3' of the models dimension, which the facts of its brand hold too
                for held in self._tables_holding(item.entry, known):
                    score[held] = score.get(held, 0.0) + 4.0
            if item.entry.type not in ("table", "column", "enum") or table not in known:
                continue
            weight = {"table": 3.0, "column": 2.0, "enum": 2.0}[item.entry.type]
            if named(item) and identifies_table(item.entry):
                # the question names the value every row of the table has ("Aurora" in
                # income_aurora): the table *of* that value, ahead of the profile's table,
                # and the tables partitioned the same way (sales_ledger_aurora)
                score[table] = score.get(table, 0.0) + 4.0
                for sibling in self.values.siblings(table):
                    score[sibling] = score.get(sibling, 0.0) + 2.0
            elif named(item):
                spread = max((len(reach.get(span, ())) for span in item.spans), default=1)
                score[table] = score.get(table, 0.0) + weight / max(1, spread)
            else:
                score[table] = score.get(table, 0.0) + 0.1
        names = {schema.entry.id: name for name, schema in known.items()}
        for path in evidence.join_paths:
            for step in path:
                for key in ("from", "to"):
                    name = names.get(step.get(key, ""))
                    if name is not None:
                        score[name] = score.get(name, 0.0) + 1.0
        if len(known) <= whole_schema_tables:
            # the whole schema in catalog order: the same prompt prefix for every question on
            # this database, so a local model's prompt cache skips re-reading it
            return list(known)
        return sorted(score, key=lambda t: (-score[t], t))

    def _tables_holding(self, entry: BaseUKF, known: Mapping[str, Any]) -> list[str]:
        """Other tables holding the value a named synonym stands for, when few do (a named
        enum value already brings every table holding it)."""
        r = entry.content_resources
        if entry.type != "synonym" or r.get("value") is None:
            return []
        tables = {h.table for h in self.values.holders(r["value"])} - {r.get("table")}
        tables &= set(known)
        return sorted(tables) if len(tables) <= VALUE_MAX_TABLES else []


def tables_named_in(text: str, known: Mapping[str, Any]) -> list[str]:
    """Known table names written out in ``text`` as identifiers (``profit_and_loss``,
    ``regions.region_code``): a name that is also an English word ("regions") counts only
    when it is qualified by a column."""
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))
    qualified = set(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\.[A-Za-z_]", text))
    return sorted(t for t in known if (t in words and "_" in t) or t in qualified)


def identifies_table(entry: BaseUKF) -> bool:
    """An enum value held by (nearly) every row of a table with more than a few rows."""
    r = entry.content_resources
    return entry.type == "enum" and is_identity(r.get("frequency") or 0, r.get("count") or 0)


def named(item: EvidenceItem) -> bool:
    """Brought in by words of the question, or found by the autonomous mode (no hits)."""
    return not item.hits or any(h.reason == "span" for h in item.hits)
