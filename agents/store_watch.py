"""Tell whether entries of some types (of one database) changed since the last look.

Caches built from the store (the schema catalog, the predicate checker's values) must not
reload on every store write: each answered question logs an Experience, which moves the
store's version. ``StoreWatch.changed()`` reads only the ids written since its last call and
reports a change when one of them is of a watched type in the watched database.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from kb.store import KnowledgeStore


class StoreWatch:
    def __init__(self, store: KnowledgeStore, types: Iterable[str], database: str) -> None:
        self.store, self.types, self.database = store, frozenset(types), database
        self._version: int | None = None
        self._lock = threading.Lock()

    def changed(self) -> bool:
        """True on the first call and whenever a watched entry was written since the last."""
        with self._lock:
            version = self.store.version
            if self._version is None:
                self._version = version
                return True
            if version == self._version:
                return False
            written = self.store.changes_since(self._version)
            self._version = version
            for entry in self.store.get_many(written).values():
                if entry.type in self.types and (
                    entry.content_resources.get("database") in (None, self.database)
                ):
                    return True
            return False
