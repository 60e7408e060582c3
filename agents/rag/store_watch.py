"""Tell whether entries of some types (of one database) changed since the last look.

Caches built from the store (the schema catalog, the predicate checker's values) must not
reload on every store write: each answered question logs an Experience, which moves the
store's version. ``StoreWatch.changed()`` reads the ids and types written since its last call
(one indexed read: several watchers look on every question) and reports a change when one of
them is of a watched type in the watched database; only those entries are loaded.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from kb.store import KnowledgeStore


class StoreWatch:
    def __init__(self, store: KnowledgeStore, types: Iterable[str], database: str) -> None:
        self.store, self.types, self.database = store, frozenset(types), database
        self._seen: int | None = None  # the last write looked at
        self._lock = threading.Lock()

    def changed(self) -> bool:
        """True on the first call and whenever a watched entry was written since the last."""
        with self._lock:
            if self._seen is None:
                self._seen = self.store.version
                return True
            written = self.store.written_since(self._seen)
            if not written:
                return False
            self._seen = written[-1][0]
            watched = [uid for _seq, uid, type_ in written if type_ in self.types]
            for entry in self.store.get_many(watched).values():
                if entry.content_resources.get("database") in (None, self.database):
                    return True
            return False
