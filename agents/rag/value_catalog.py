"""Which tables hold a stored value, and which tables describe the same entity.

Questions reach tables through values: "Gales" is a synonym of model_code 'ZP3', which the
models dimension holds but so do the fact tables of the brand that sells it; a profile's
``department=OR`` is the department code every row of ``income_orion`` and
``sales_ledger_orion`` carries. ``ValueCatalog`` indexes the profiled enum values of one
database (reloaded when enums change, like the schema catalog) for those lookups:

- ``holders(value)``: every (table, column) holding ``value``, with its share of the rows;
- ``siblings(table)``: tables partitioned like ``table`` (an identity value, one that (nearly)
  every row holds, shared by both: income_vega and sales_ledger_vega both have
  dept_code = 'VG' on every row).

Codes are compared exactly first and case-insensitively when nothing matches exactly.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from agents.rag.store_watch import StoreWatch
from kb.store import KnowledgeStore

IDENTITY_FREQUENCY = 0.99  # an enum this common identifies its table ...
IDENTITY_MIN_ROWS = 20  # ... when the table is not tiny
MAX_SIBLINGS = 4  # an identity value shared by more tables does not partition them


def is_identity(frequency: float, count: int) -> bool:
    """A value (nearly) every row of a table holds, in a table that is not tiny."""
    return frequency >= IDENTITY_FREQUENCY and count >= IDENTITY_MIN_ROWS


@dataclass(frozen=True)
class ValueHolder:
    """A column of a table holding a value, on ``frequency`` of its non-null rows."""

    table: str
    column: str
    value: str
    frequency: float
    count: int

    @property
    def identifies_table(self) -> bool:
        """(Nearly) every row of a table that is not tiny holds the value."""
        return is_identity(self.frequency, self.count)


class ValueCatalog:
    """Profiled enum values of ``database`` in ``store``, by value and by table."""

    def __init__(self, store: KnowledgeStore, database: str) -> None:
        self.store, self.database = store, database
        self._exact: dict[str, list[ValueHolder]] = {}
        self._folded: dict[str, list[ValueHolder]] = {}
        self._identities: dict[str, set[tuple[str, str]]] = {}
        self._tables_of: dict[tuple[str, str], set[str]] = {}
        self._watch = StoreWatch(store, ("enum",), database)
        self._lock = threading.Lock()

    def holders(self, value: object) -> list[ValueHolder]:
        """Columns holding ``value`` (exact match, else case-insensitive), by table name."""
        self._refresh()
        text = str(value)
        found = self._exact.get(text) or self._folded.get(text.casefold()) or []
        return sorted(found, key=lambda h: (h.table, h.column))

    def siblings(self, table: str) -> list[str]:
        """Other tables sharing an identity value with ``table`` (same column and value),
        when at most ``MAX_SIBLINGS`` tables share it (a constant column says nothing)."""
        self._refresh()
        found: set[str] = set()
        for identity in self._identities.get(table, set()):
            sharing = self._tables_of.get(identity, set())
            if len(sharing) <= MAX_SIBLINGS:
                found |= sharing
        return sorted(found - {table})

    def _refresh(self) -> None:
        with self._lock:
            if not self._watch.changed():
                return
            exact: dict[str, list[ValueHolder]] = {}
            folded: dict[str, list[ValueHolder]] = {}
            identities: dict[str, set[tuple[str, str]]] = {}
            for entry in self.store.iterate(type="enum"):
                r = entry.content_resources
                if r.get("database") != self.database or r.get("value") is None:
                    continue
                holder = ValueHolder(
                    table=str(r.get("table")),
                    column=str(r.get("column")),
                    value=str(r["value"]),
                    frequency=float(r.get("frequency") or 0.0),
                    count=int(r.get("count") or 0),
                )
                exact.setdefault(holder.value, []).append(holder)
                folded.setdefault(holder.value.casefold(), []).append(holder)
                if holder.identifies_table:
                    identities.setdefault(holder.table, set()).add(
                        (holder.column.lower(), holder.value)
                    )
            tables_of: dict[tuple[str, str], set[str]] = {}
            for table, pairs in identities.items():
                for pair in pairs:
                    tables_of.setdefault(pair, set()).add(table)
            self._exact, self._folded = exact, folded
            self._identities, self._tables_of = identities, tables_of
