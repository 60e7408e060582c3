"""How an index follows the store: the writes since the version it was built at."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kb.store import KnowledgeStore
    from ukf import BaseUKF


@dataclass(frozen=True)
class StoreChanges:
    """Entries written since an index's version: to (re)add, and to remove (now inactive)."""

    version: int
    active: list[BaseUKF]
    removed: list[str]


def changes_since(store: KnowledgeStore, version: int) -> StoreChanges | None:
    """None when the store has not moved since ``version``."""
    current = store.version
    if current == version:
        return None
    changed = store.get_many(store.changes_since(version))
    return StoreChanges(
        version=current,
        active=[e for e in changed.values() if not e.inactive_mark],
        removed=[uid for uid, e in changed.items() if e.inactive_mark],
    )


def refresh_entries(index: Any, store: KnowledgeStore) -> bool:
    """Bring an index with ``add(entries)``, ``remove(ids)`` and ``version`` up to the store."""
    changes = changes_since(store, index.version)
    if changes is None:
        return False
    index.remove(changes.removed)
    index.add(changes.active)
    index.version = changes.version
    return True
