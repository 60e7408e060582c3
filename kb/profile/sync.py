"""Incremental re-profiling: compare fresh entries with the store and write only changes.

- An entry whose id is new (or was inactive) is **added**.
- An entry already stored is merged with the stored one: content, content resources and
  structural relations (``column_of``, ``value_of``, ``joins``) come from the new profile;
  descriptions, extra synonyms, extra relations, priority, auths, triggers, metadata and
  timestamps written by others are kept. If the merge equals the stored entry it is
  **unchanged** (and not written: same ``content_hash``, same timestamp, no version bump),
  otherwise **updated** with a fresh timestamp.
- A stored profiler entry of this database that the new profile no longer produces (dropped
  table, column or enum value; old version of a column whose type changed) is
  **invalidated** with ``store.remove``, and so is, transitively, every active entry whose
  ``related`` points at an invalidated id, unless the profile just wrote it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from kb.store import KnowledgeStore
from ukf import BaseUKF, bump_version
from ukf.base import utcnow
from ukf.tags import sanitize_tag_value
from ukf.types.schema import SCHEMA_COLLECTION

logger = logging.getLogger(__name__)

STRUCTURAL_RELATIONS = frozenset({"column_of", "value_of", "joins"})
SCHEMA_TYPES = ("table", "column", "enum")
LOAD_BATCH = 5_000  # big keyset pages: each page re-runs the tag filter
SchemaKey = tuple[str, ...]


def schema_key(entry: BaseUKF) -> SchemaKey:
    """``(type, table, column, value)`` of a schema entry, whatever its version."""
    parts = [entry.type]
    for slot in ("TABLE", "COLUMN", "ENUM"):
        parts += entry.tag_values(slot)[:1]
    return tuple(parts)


class StoredSchema:
    """The profiler's entries of one database already in the store (active or not).

    Args:
        entries: stored entries written by the profiler for the database.
    """

    def __init__(self, entries: Iterable[BaseUKF]) -> None:
        self.by_id: dict[str, BaseUKF] = {}
        self._by_key: dict[SchemaKey, list[BaseUKF]] = {}
        for entry in entries:
            self.by_id[entry.id] = entry
            self._by_key.setdefault(schema_key(entry), []).append(entry)

    @classmethod
    def load(cls, store: KnowledgeStore, database: str, creator: str) -> StoredSchema:
        """Read the schema entries ``creator`` wrote for ``database`` (global layer only)."""
        tag = sanitize_tag_value(database)
        found = store.iterate(
            type=list(SCHEMA_TYPES),
            collection=SCHEMA_COLLECTION,
            source="system",
            tags={"DATABASE": tag},
            active=None,
            batch_size=LOAD_BATCH,
        )
        mine = [
            e
            for e in found
            if e.creator == creator
            and e.owner is None
            and e.workspace is None
            and e.tag_values("DATABASE") == [tag]
        ]
        return cls(mine)

    def active(self) -> list[BaseUKF]:
        """The stored entries not marked inactive."""
        return [e for e in self.by_id.values() if not e.inactive_mark]

    def current(self, key: SchemaKey) -> BaseUKF | None:
        """The active entry for ``key``, else the most recent inactive one."""
        candidates = self._by_key.get(key, [])
        if not candidates:
            return None
        return max(candidates, key=lambda e: (not e.inactive_mark, e.timestamp))

    def column_version(self, table: str, column: str, data_type: str) -> tuple[str, list[str]]:
        """The stored version when the declared type is the same, else a bumped one."""
        key = ("column", sanitize_tag_value(table), sanitize_tag_value(column))
        old = self.current(key)
        if old is None:
            return "v1", []
        if old.content_resources.get("data_type") == data_type:
            return old.version, list(old.parents)
        same_type = [
            e for e in self._by_key[key] if e.content_resources.get("data_type") == data_type
        ]
        if same_type:  # changed back: bring that version back
            back = max(same_type, key=lambda e: e.timestamp)
            return back.version, list(back.parents)
        newest = max(self._by_key[key], key=lambda e: e.timestamp)
        return bump_version(newest.version), [old.id]

    def has_description(self, entry: BaseUKF) -> bool:
        """Whether the stored entry with ``entry``'s id has a description."""
        stored = self.by_id.get(entry.id)
        return stored is not None and bool(stored.description)


@dataclass
class ChangePlan:
    """What a profile changes in the store."""

    added: list[BaseUKF] = field(default_factory=list)
    updated: list[BaseUKF] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    invalidated: list[str] = field(default_factory=list)


def merge_entry(old: BaseUKF, new: BaseUKF) -> BaseUKF:
    """``new`` carrying what others added to ``old`` (see the module docstring)."""
    extra = [r for r in old.related if r.relation not in STRUCTURAL_RELATIONS]
    return new.model_copy(
        update={
            "description": new.description or old.description,
            "short_description": new.short_description or old.short_description,
            "notes": new.notes or old.notes,
            "synonyms": list(dict.fromkeys([*old.synonyms, *new.synonyms])),
            "related": [*new.related, *(r for r in extra if r not in new.related)],
            "parents": old.parents or new.parents,
            "priority": old.priority,
            "auths": old.auths,
            "triggers": old.triggers,
            "content_composers": old.content_composers or new.content_composers,
            "metadata": old.metadata,
            "profile": old.profile,
            "last_verified": old.last_verified,
            "expiration": old.expiration,
            "timestamp": old.timestamp,
            "inactive_mark": False,
        }
    )


def plan_changes(
    store: KnowledgeStore, stored: StoredSchema, entries: Iterable[BaseUKF]
) -> ChangePlan:
    """Sort fresh entries into added / updated / unchanged and find what to invalidate."""
    plan, now = ChangePlan(), utcnow()
    fresh = list({e.id: e for e in entries}.values())
    for entry in fresh:
        old = stored.by_id.get(entry.id)
        if old is None:
            plan.added.append(entry.model_copy(update={"timestamp": now}))
            continue
        merged = merge_entry(old, entry)
        if old.inactive_mark:
            plan.added.append(merged.model_copy(update={"timestamp": now}))
        elif merged.to_json() == old.to_json():
            plan.unchanged.append(entry.id)
        else:
            plan.updated.append(merged.model_copy(update={"timestamp": now}))
    written = {e.id for e in fresh}
    gone = [e.id for e in stored.active() if e.id not in written]
    plan.invalidated = _with_dependents(store, gone, written)
    return plan


def _with_dependents(store: KnowledgeStore, ids: list[str], keep: set[str]) -> list[str]:
    """``ids`` plus every active entry related to one of them, transitively."""
    invalid, queue = list(ids), list(ids)
    seen = set(ids)
    while queue:
        target = queue.pop()
        for dependent in store.iterate(related_to=target):
            if dependent.id not in seen and dependent.id not in keep:
                seen.add(dependent.id)
                invalid.append(dependent.id)
                queue.append(dependent.id)
    return invalid


def apply_changes(store: KnowledgeStore, plan: ChangePlan) -> int:
    """Write the plan (at most two transactions, none when nothing changed)."""
    writes = [*plan.added, *plan.updated]
    if writes:
        store.upsert_many(writes)
    if plan.invalidated:
        store.remove(plan.invalidated)
        logger.info("invalidated %d entries", len(plan.invalidated))
    return store.version
