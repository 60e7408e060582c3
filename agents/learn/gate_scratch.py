"""The gate's scratch store: a private copy of the knowledge store where candidates are
switched on and off while the live store (and every live ``ask``) never sees them.

The copy is made through the store's own JSON Lines export and import, so it works whatever
the live store runs on (SQLite, PostgreSQL); it lives in a SQLite file in a temporary folder
and has its own :class:`~indices.index_set.IndexSet`. In the copy:

- the held questions' own experiences are hidden, so a held question is not answered by its
  own worked example (its gold SQL would leak into the prompt);
- a candidate set is switched on with ``restore`` and off with ``remove`` (the store's
  inactive mark), then the indices are refreshed incrementally: one evaluation costs a few
  writes and a refresh, not a rebuild;
- every question the pipeline logs while the gate asks is hidden again at once, so the
  answers of one evaluation never become worked examples of the next.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from indices.embeddings import Embedder
from indices.index_set import IndexSet
from kb.store import KnowledgeStore

IndexFactory = Callable[[KnowledgeStore], IndexSet]


class ScratchStore:
    """A copy of ``live`` with its own indices (see the module docstring).

    Args:
        live: the store to copy (only read).
        embedder: embeds the copy's entries (None: string, graph and facet retrieval only).
            Pass the live indices' own: it caches vectors by text (in memory, and on disk
            with an embedding store), so the copy's indices read the live store's vectors
            instead of embedding the knowledge base again (GeoQuery, MiniLM: 1.3 s, not 12 s).
        hidden: ids to hide in the copy (the held questions' experiences).
        index_factory: builds the copy's indices (default: ``IndexSet.build(store, embedder)``).
    """

    def __init__(
        self,
        live: KnowledgeStore,
        embedder: Embedder | None,
        *,
        hidden: Iterable[str] = (),
        index_factory: IndexFactory | None = None,
    ) -> None:
        started = time.perf_counter()
        self._folder = tempfile.TemporaryDirectory(prefix="almanac-gate-")
        folder = Path(self._folder.name)
        dump = folder / "live.jsonl"
        self.copied = live.export_jsonl(dump)
        self.store = KnowledgeStore(f"sqlite:///{folder / 'scratch.db'}")
        self.store.import_jsonl(dump)
        dump.unlink()
        hidden = [uid for uid in hidden if self.store.exists(uid)]
        if hidden:
            self.store.remove(hidden)
        self.copy_seconds = time.perf_counter() - started
        started = time.perf_counter()
        build = index_factory or (lambda store: IndexSet.build(store, embedder))
        self.indices = build(self.store)
        self.index_seconds = time.perf_counter() - started
        self._on: set[str] = set()

    def switch(self, ids: Iterable[str]) -> None:
        """Make exactly ``ids`` (besides what the copy had active) visible to retrieval."""
        wanted = set(ids)
        off, on = self._on - wanted, wanted - self._on
        if off:
            self.store.remove(sorted(off))
        if on:
            self.store.restore(sorted(on))
        self._on = wanted
        if off or on:
            self.indices.refresh(wait=True)

    def forget(self, ukf_id: str | None) -> None:
        """Hide an entry the pipeline logged in the copy (an asked question)."""
        if ukf_id and self.store.exists(ukf_id):
            self.store.remove([ukf_id])
            self.indices.refresh(wait=True)

    def close(self) -> None:
        self.indices.stop()
        self.store.close()
        self._folder.cleanup()
