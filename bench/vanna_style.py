"""The baseline's memory, as Vanna keeps it: DDL, documentation and question-SQL pairs, each
retrieved by embedding similarity to the question (top-k of each, no schema linking, no
knowledge graph, no triggers).

DDL comes from the profiled tables of the question's database (one CREATE TABLE per table),
documentation from the knowledge pack's business entries (glossary, rules, metrics,
documents), pairs from what the benchmark stream reveals.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np

from agents.rag.schema_slice import SchemaCatalog
from indices.embeddings import Embedder
from kb.store import KnowledgeStore

DOC_TYPES = ("knowledge", "document", "rule", "metric", "predicate", "taxonomy", "synonym")


@dataclass
class Related:
    ddl: list[str] = field(default_factory=list)
    docs: list[str] = field(default_factory=list)
    pairs: list[tuple[str, str]] = field(default_factory=list)


class _Shelf:
    """Texts with their embeddings; top-k by cosine."""

    def __init__(self) -> None:
        self.items: list[object] = []
        self.vectors: list[np.ndarray] = []

    def add(self, item: object, vector: np.ndarray) -> None:
        self.items.append(item)
        self.vectors.append(vector)

    def top(self, query: np.ndarray, k: int) -> list[object]:
        if not self.items:
            return []
        scores = np.vstack(self.vectors) @ query
        return [self.items[i] for i in np.argsort(-scores, kind="stable")[:k]]


class VannaMemory:
    """Per database: DDL, docs and pairs shelves, filled lazily from the store."""

    def __init__(
        self,
        store: KnowledgeStore,
        embedder: Embedder,
        *,
        k_ddl: int = 6,
        k_docs: int = 5,
        k_pairs: int = 5,
    ) -> None:
        self.store, self.embedder = store, embedder
        self.k_ddl, self.k_docs, self.k_pairs = k_ddl, k_docs, k_pairs
        self._ddl: dict[str, _Shelf] = {}
        self._docs: dict[str, _Shelf] = {}
        self._pairs: dict[str, _Shelf] = {}
        self._lock = threading.Lock()

    def related(self, question: str, database: str) -> Related:
        self._load(database)
        query = self.embedder.embed([question])[0]
        return Related(
            ddl=[str(t) for t in self._ddl[database].top(query, self.k_ddl)],
            docs=[str(t) for t in self._docs[database].top(query, self.k_docs)],
            pairs=list(self._pairs.setdefault(database, _Shelf()).top(query, self.k_pairs)),  # type: ignore[arg-type]
        )

    def add_pair(self, database: str, question: str, sql: str) -> None:
        vector = self.embedder.embed([question])[0]
        with self._lock:
            self._pairs.setdefault(database, _Shelf()).add((question, sql), vector)

    def _load(self, database: str) -> None:
        with self._lock:
            if database in self._ddl:
                return
            catalog = SchemaCatalog(self.store, database)
            ddl = [
                catalog.render([name], examples=False, max_columns=200) for name in catalog.tables
            ]
            docs = [
                e.text()
                for e in self.store.iterate(type=list(DOC_TYPES))
                if database in e.tag_values("DATABASE") or not e.tag_values("DATABASE")
            ]
            self._ddl[database] = self._shelf(ddl)
            self._docs[database] = self._shelf(docs)

    def _shelf(self, texts: list[str]) -> _Shelf:
        shelf = _Shelf()
        if texts:
            for text, vector in zip(texts, self.embedder.embed(texts), strict=True):
                shelf.add(text, vector)
        return shelf
