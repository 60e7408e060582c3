"""The multi-vector index: one faiss index per serializer (RubikSQL §5.1).

Every entry is embedded once per serializer that has text for it (:mod:`indices.serializers`).
Embeddings are cached by the hash of the serialized text, so rebuilding the index, or
re-adding an entry whose text did not change, embeds nothing. Search runs the query against
one or several serializers (top-k, or MMR for diversity) and merges the per-serializer rankings
by reciprocal-rank fusion or round robin.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Literal

import faiss
import numpy as np

from indices import faiss_threads
from indices.embeddings import Embedder
from indices.hits import Hit
from indices.serializers import GENERAL_SERIALIZER, Serializer, serializers
from indices.sync import refresh_entries

if TYPE_CHECKING:
    from kb.store import KnowledgeStore
    from ukf import BaseUKF

Fusion = Literal["rrf", "round_robin"]
RRF_K = 60
FUSION_DEPTH = 20  # per-serializer depth when fusing, so agreement below the top can count


def _text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class _Space:
    """One serializer's faiss index with its id mapping."""

    def __init__(self, dimension: int) -> None:
        self.index = faiss.IndexIDMap2(faiss.IndexFlatIP(dimension))
        self.ids: dict[int, str] = {}
        self.rows: dict[str, int] = {}


class VectorIndex:
    """Multi-vector search over UKF entries.

    Args:
        embedder: Turns texts into L2-normalised float32 vectors.
        sketch: Turns a question into its query sketch (enables the ``sketch`` serializer).
        threads: faiss OpenMP threads per search (see :mod:`indices.faiss_threads`); None
            leaves faiss as it is.
    """

    def __init__(
        self,
        embedder: Embedder,
        *,
        sketch: Callable[[str], str] | None = None,
        threads: int | None = 1,
    ) -> None:
        self.threads = threads
        self.embedder = embedder
        self.serializers: dict[str, Serializer] = serializers(sketch)
        self._sketch = sketch
        self._spaces = {name: _Space(embedder.dimension) for name in self.serializers}
        self._cache: dict[str, np.ndarray] = {}
        self._types: dict[str, str] = {}
        self._next_row = 0
        self._lock = threading.RLock()
        self.version = 0
        self.embedded = 0  # texts actually sent to the embedder (cache misses)

    # ------------------------------------------------------------------ writing
    def _vectors(self, texts: list[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if _text_key(t) not in self._cache))
        if missing:
            vectors = np.asarray(self.embedder.embed(missing), dtype=np.float32)
            self.embedded += len(missing)
            for text, vector in zip(missing, vectors, strict=True):
                self._cache[_text_key(text)] = vector
        return np.stack([self._cache[_text_key(t)] for t in texts])

    def _query_vector(self, text: str) -> np.ndarray:
        """A question's vector; not kept in the entry cache (that would grow with traffic)."""
        cached = self._cache.get(_text_key(text))
        if cached is not None:
            return cached[None, :]
        return np.asarray(self.embedder.embed([text]), dtype=np.float32)

    def seed_cache(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Put known embeddings in the cache (saved embeddings, benchmarks): never re-embedded."""
        for text, vector in zip(texts, np.asarray(vectors, dtype=np.float32), strict=True):
            self._cache[_text_key(text)] = vector

    def add(self, entries: Iterable[BaseUKF]) -> None:
        """Add or replace entries in every serializer space (incremental)."""
        batch = list(entries)
        with self._lock:
            self.remove(e.id for e in batch)
            for name, serializer in self.serializers.items():
                texts = [(e.id, serializer(e)) for e in batch]
                pairs = [(uid, text) for uid, text in texts if text]
                if not pairs:
                    continue
                space = self._spaces[name]
                rows = np.arange(self._next_row, self._next_row + len(pairs), dtype=np.int64)
                self._next_row += len(pairs)
                space.index.add_with_ids(self._vectors([t for _, t in pairs]), rows)
                for row, (uid, _) in zip(rows.tolist(), pairs, strict=True):
                    space.ids[row], space.rows[uid] = uid, row
            self._types.update((e.id, e.type) for e in batch)

    def remove(self, ukf_ids: Iterable[str]) -> None:
        with self._lock:
            for uid in list(ukf_ids):
                self._types.pop(uid, None)
                for space in self._spaces.values():
                    row = space.rows.pop(uid, None)
                    if row is not None:
                        del space.ids[row]
                        ids = np.array([row], dtype=np.int64)
                        # faiss's wrapper takes an id array; its stub names only IDSelector
                        space.index.remove_ids(ids)  # type: ignore[arg-type]

    @classmethod
    def from_store(
        cls,
        store: KnowledgeStore,
        embedder: Embedder,
        *,
        sketch: Callable[[str], str] | None = None,
    ) -> VectorIndex:
        index = cls(embedder, sketch=sketch)
        index.version = store.version
        index.add(store.iterate())
        return index

    def refresh(self, store: KnowledgeStore) -> bool:
        """Apply the store's writes since :attr:`version`; True when something changed."""
        return refresh_entries(self, store)

    def size(self, serializer: str = GENERAL_SERIALIZER) -> int:
        return len(self._spaces[serializer].rows)

    # ------------------------------------------------------------------ reading
    def search(
        self,
        query: str,
        *,
        serializers: Sequence[str] = ("query",),
        k: int = 10,
        types: Iterable[str] | None = None,
        mmr: bool = False,
        mmr_lambda: float = 0.7,
        fusion: Fusion = "rrf",
    ) -> list[Hit]:
        """The ``k`` best entries for ``query`` over ``serializers``, fused into one ranking."""
        keep = set(types) if types is not None else None
        rankings = []
        for name in serializers:
            text = self._sketch(query) if name == "sketch" and self._sketch else query
            depth = k if len(serializers) == 1 else max(k, FUSION_DEPTH)
            ranked = self._search_space(name, text, depth, keep, mmr, mmr_lambda)
            rankings.append([(uid, score, name) for uid, score in ranked])
        return _fuse(rankings, k, fusion)

    def _search_space(
        self, name: str, text: str, k: int, keep: set[str] | None, mmr: bool, mmr_lambda: float
    ) -> list[tuple[str, float]]:
        space = self._spaces[name]
        with self._lock:
            if space.index.ntotal == 0:
                return []
            query = self._query_vector(text)
            depth = min(space.index.ntotal, max(k * 4, 50) if (mmr or keep) else k)
            scores, rows = faiss_threads.search(space.index, query, depth, self.threads)
            found = [
                (space.ids[r], float(s), r)
                for s, r in zip(scores[0], rows[0], strict=True)
                if r >= 0 and r in space.ids
            ]
            found = [f for f in found if keep is None or self._types.get(f[0]) in keep]
            if not mmr:
                return [(uid, score) for uid, score, _ in found[:k]]
            vectors = (
                np.stack([space.index.reconstruct(int(r)) for _, _, r in found])
                if found
                else np.zeros((0, self.embedder.dimension), dtype=np.float32)
            )
        picked = _mmr(np.array([s for _, s, _ in found]), vectors, k, mmr_lambda)
        return [(found[i][0], found[i][1]) for i in picked]


def _mmr(relevance: np.ndarray, vectors: np.ndarray, k: int, lam: float) -> list[int]:
    """Maximal marginal relevance: trade relevance against similarity to what is picked."""
    picked: list[int] = []
    candidates = list(range(len(relevance)))
    while candidates and len(picked) < k:
        if picked:
            redundancy = (vectors[candidates] @ vectors[picked].T).max(axis=1)
        else:
            redundancy = np.zeros(len(candidates))
        gains = lam * relevance[candidates] - (1 - lam) * redundancy
        best = candidates[int(np.argmax(gains))]
        picked.append(best)
        candidates.remove(best)
    return picked


def _fuse(rankings: list[list[tuple[str, float, str]]], k: int, fusion: Fusion) -> list[Hit]:
    """Merge per-serializer rankings (``rrf``: Σ 1/(60+rank); ``round_robin``: interleave)."""
    best: dict[str, tuple[float, str, float]] = {}
    if fusion == "round_robin":
        order = 0
        for rank in range(max((len(r) for r in rankings), default=0)):
            for ranking in rankings:
                if rank < len(ranking) and ranking[rank][0] not in best:
                    uid, score, name = ranking[rank]
                    best[uid] = (-order, name, score)
                    order += 1
    else:
        for ranking in rankings:
            for rank, (uid, score, name) in enumerate(ranking):
                fused, first, top = best.get(uid, (0.0, name, score))
                best[uid] = (fused + 1.0 / (RRF_K + rank + 1), first, max(top, score))
    ordered = sorted(best.items(), key=lambda item: (-item[1][0], -item[1][2]))[:k]
    return [
        Hit(
            uid,
            fused if fusion == "rrf" else similarity,
            "vector",
            phrase=name,
            detail={"serializer": name, "similarity": similarity},
        )
        for uid, (fused, name, similarity) in ordered
    ]
