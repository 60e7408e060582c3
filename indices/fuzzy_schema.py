"""Fuzzy indices over the schema knowledge of a store: tables, columns and enum values.

``SchemaIndices`` builds each :class:`~indices.fuzzy.FuzzyIndex` from the store on first use and
rebuilds it when a schema entry (table, column or enum) was written since, detected through
``store.version`` and ``store.changes_since``: a write of other knowledge (an experience logged
per question, say) costs one version read and one count, not a rebuild. Rebuilds reuse the
embeddings of texts the previous index held, so only new texts are embedded.

Indexed texts, one item each (same id; the best one wins):

- tables: the name, each synonym, the description; scope ``(table,)``
- columns: the name, each synonym, the description; scope ``(table, column)``
- enums: the value, each synonym; scope ``(table, column)``

Embedding many texts is slow on CPU (all-MiniLM-L6-v2: about 1.4 ms per short text on two
idle cores, so minutes for 100,000 values). A (re)build with more than ``sync_embed_limit``
texts to embed is therefore served by containment alone at once, while a background thread
embeds it and swaps in the embedded index when done. While one thread rebuilds, others keep
the old index.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from indices.embeddings import Embedder
from indices.fuzzy import DEFAULT_WEIGHT, FuzzyIndex, FuzzyItem
from kb.store import KnowledgeStore
from kb.visibility import Reader
from ukf import BaseUKF

logger = logging.getLogger(__name__)

Kind = Literal["table", "column", "enum"]
KINDS: tuple[Kind, ...] = ("table", "column", "enum")
DEFAULT_SYNC_EMBED_LIMIT = 20_000
MAX_DESCRIPTION_CHARS = 300
_ID_CHUNK = 500
_PAGE = 5000  # store pages: 100,000 entries read in 7 s instead of 18 s with 500


@dataclass
class _Slot:
    index: FuzzyIndex | None = None  # what searches use
    embedded: FuzzyIndex | None = None  # the latest embedded index, whose vectors are reused
    stale: bool = True
    generation: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


class SchemaIndices:
    """Lazily built, self-refreshing fuzzy indices over one database's schema knowledge.

    Args:
        store: the knowledge store.
        database: the ``[DATABASE:..]`` tag value to restrict to; None for every database.
        embedder: for the cosine part of scores; None for containment only.
        reader: visibility of the entries indexed (None: system access).
        weight: ``w`` of the fused score (``indices.fuzzy``).
        sync_embed_limit: when a (re)build has more new texts to embed than this, it is served
            by containment at once and embedded in the background (None: always wait).
    """

    def __init__(
        self,
        store: KnowledgeStore,
        *,
        database: str | None = None,
        embedder: Embedder | None = None,
        reader: Reader | None = None,
        weight: float = DEFAULT_WEIGHT,
        sync_embed_limit: int | None = DEFAULT_SYNC_EMBED_LIMIT,
    ) -> None:
        self.store, self.database, self.embedder, self.reader = store, database, embedder, reader
        self.weight, self.sync_embed_limit = weight, sync_embed_limit
        self._slots = {kind: _Slot() for kind in KINDS}
        self._version_lock = threading.Lock()
        self._version: int | None = None
        self._background: dict[Kind, threading.Thread] = {}

    def get(self, kind: Kind) -> FuzzyIndex:
        """The current index of ``kind`` (built or rebuilt first when needed)."""
        self._check_version()
        slot = self._slots[kind]
        if slot.index is not None and not slot.stale:
            return slot.index
        if not slot.lock.acquire(blocking=slot.index is None):
            return slot.index  # type: ignore[return-value]  # being rebuilt: serve the old one
        try:
            if slot.index is None or slot.stale:
                self._rebuild(kind, slot)
            assert slot.index is not None
            return slot.index
        finally:
            slot.lock.release()

    def wait_embedded(self, timeout: float | None = None) -> bool:
        """Wait for background embedding threads; True when none is still running."""
        for thread in list(self._background.values()):
            thread.join(timeout)
        return not any(thread.is_alive() for thread in self._background.values())

    # ------------------------------------------------------------------ internals
    def _check_version(self) -> None:
        version = self.store.version
        with self._version_lock:
            if version == self._version:
                return
            since, self._version = self._version, version
        if since is None or self._schema_changed(since):
            for slot in self._slots.values():
                slot.stale = True

    def _schema_changed(self, since: int) -> bool:
        changed = self.store.changes_since(since)
        for start in range(0, len(changed), _ID_CHUNK):
            chunk = changed[start : start + _ID_CHUNK]
            if self.store.count(id=chunk, type=list(KINDS), active=None):
                return True
        return False

    def _rebuild(self, kind: Kind, slot: _Slot) -> None:
        slot.stale = False  # writes from now on mark it stale again
        index = FuzzyIndex(self._items(kind), weight=self.weight)
        slot.generation += 1
        missing = index.missing_embeddings(slot.embedded) if self.embedder else 0
        limit = self.sync_embed_limit
        if self.embedder is not None and (limit is None or missing <= limit):
            index = slot.embedded = index.with_embeddings(self.embedder, reuse=slot.embedded)
        slot.index = index
        logger.info("built the %s index: %d items, embedded: %s", kind, len(index), index.embedded)
        if self.embedder is not None and not index.embedded:
            thread = threading.Thread(
                target=self._embed_later,
                args=(kind, slot, slot.generation, index),
                name=f"fuzzy-embed-{kind}",
                daemon=True,
            )
            self._background[kind] = thread
            thread.start()

    def _embed_later(self, kind: Kind, slot: _Slot, generation: int, index: FuzzyIndex) -> None:
        assert self.embedder is not None
        try:
            embedded = index.with_embeddings(self.embedder, reuse=slot.embedded)
        except Exception:
            logger.exception("embedding the %s index failed; serving containment only", kind)
            return
        with slot.lock:
            slot.embedded = embedded  # reusable by the next rebuild even if this one is stale
            if slot.generation == generation:
                slot.index = embedded
                logger.info("the %s index is embedded now (%d items)", kind, len(embedded))

    def _items(self, kind: Kind) -> Iterator[FuzzyItem]:
        # Filtering on the DATABASE tag in SQL is slower than here: every entry carries it.
        entries = self.store.iterate(type=kind, reader=self.reader, batch_size=_PAGE)
        for entry in entries:
            if self.database is None or entry.content_resources.get("database") == self.database:
                yield from _entry_items(kind, entry)


def _entry_items(kind: Kind, entry: BaseUKF) -> Iterator[FuzzyItem]:
    res = entry.content_resources
    table = str(res.get("table", entry.name))
    if kind == "table":
        payload: dict[str, Any] = {"table": table, "description": _short(entry.description)}
        scope: tuple[str, ...] = (table,)
        texts = [table, *entry.synonyms, _short(entry.description)]
    elif kind == "column":
        column = str(res.get("column", entry.name))
        payload = {
            "table": table,
            "column": column,
            "data_type": res.get("data_type", ""),
            "description": _short(entry.description),
        }
        scope, texts = (table, column), [column, *entry.synonyms, _short(entry.description)]
    else:
        column = str(res.get("column", ""))
        value = res.get("value")
        payload = {
            "table": table,
            "column": column,
            "value": value,
            "count": res.get("count"),
            "frequency": res.get("frequency"),
            "synonyms": list(entry.synonyms),
        }
        scope, texts = (table, column), [str(value), *entry.synonyms]
    for text in dict.fromkeys(text for text in texts if text and text.strip()):
        yield FuzzyItem(entry.id, text, payload, scope)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_DESCRIPTION_CHARS else text[: MAX_DESCRIPTION_CHARS - 1] + "…"
