"""Fuzzy matching of short texts (column names, enum values, synonyms) for agent tools.

The score of an item for a query fuses spelling and meaning::

    score = w · containment + (1 − w) · max(cosine, 0)        (w = ``weight``, default 0.5)

- **containment** is the asymmetric Jaccard containment ``|Q ∩ D| / |Q|`` of the character
  3-gram sets of the normalised query and item (``indices.fuzzy_text``): how much of what was typed
  appears in the item. It forgives typos and abbreviations (``untied states`` → 0.67 against
  ``United States``) and gives 1.0 to an item that contains the whole query.
- **cosine** is the similarity of their sentence embeddings (``indices.embeddings``), which finds
  matches that share no spelling (``automobile`` → ``car``).

Without an embedder the score is the containment alone and ``cosine`` is None. Ties are broken
by coverage ``|Q ∩ D| / |D|`` (prefer ``States`` over ``United States`` for ``states``).

``FuzzyIndex`` is built once; a search never loops over items in Python. Candidates come from
the inverted index (n-gram → sorted item rows; the overlap counts are one ``bincount`` or
``unique`` over the query's posting lists) and, with embeddings, from one matrix-vector
product (float16 vectors: half the memory and time); each side contributes at most
``max_candidates`` rows, and only those are scored.
An item may appear under several texts (a value and its synonyms: same ``id``); the best one
is returned. Items carry a ``scope`` (e.g. ``(table, column)``); rows are sorted by scope, so
restricting a search to a scope prefix is a contiguous slice of every array.
"""

from __future__ import annotations

import bisect
import copy
import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from indices.embeddings import Embedder
from indices.fuzzy_text import DEFAULT_N, ngrams_of_tokens, tokens

logger = logging.getLogger(__name__)

DEFAULT_WEIGHT = 0.5
DEFAULT_MAX_CANDIDATES = 200
MAX_QUERY_GRAMS = 256
_LAST = "\U0010ffff"


@dataclass(frozen=True)
class FuzzyItem:
    """One searchable text. Several items may share an ``id`` (a value and its synonyms)."""

    id: str
    text: str
    payload: dict[str, Any] = field(default_factory=dict)
    scope: tuple[str, ...] = ()


@dataclass(frozen=True)
class FuzzyMatch:
    """A ranked match: the item's best text and both component scores."""

    id: str
    text: str
    payload: dict[str, Any]
    score: float
    containment: float
    cosine: float | None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


ItemLike = FuzzyItem | tuple[Any, ...]


def _item(value: ItemLike) -> FuzzyItem:
    if isinstance(value, FuzzyItem):
        return value
    ident, text, *rest = value
    payload = rest[0] if rest else {}
    scope = tuple(rest[1]) if len(rest) > 1 else ()
    return FuzzyItem(str(ident), str(text), dict(payload or {}), scope)


class FuzzyIndex:
    """An immutable index over ``(id, text, payload[, scope])`` items; safe to share.

    Args:
        items: ``FuzzyItem`` objects or tuples ``(id, text, payload[, scope])``.
        embedder: embeds item texts now and queries at search time; None for containment only.
        weight: ``w`` in the score formula (1.0 ignores embeddings even when present).
        n: n-gram length.
        max_candidates: at most this many rows per candidate source are scored.
        reuse: an earlier index built with the same embedder; its vectors are reused for the
            texts it already holds (a rebuild then embeds only new texts).
    """

    def __init__(
        self,
        items: Iterable[ItemLike],
        *,
        embedder: Embedder | None = None,
        weight: float = DEFAULT_WEIGHT,
        n: int = DEFAULT_N,
        max_candidates: int = DEFAULT_MAX_CANDIDATES,
        reuse: FuzzyIndex | None = None,
    ) -> None:
        if not 0.0 <= weight <= 1.0 or max_candidates < 1:
            raise ValueError("weight must be within [0, 1] and max_candidates at least 1")
        started = time.perf_counter()
        listed = sorted((_item(item) for item in items), key=lambda item: item.scope)
        self.weight, self.n, self.max_candidates = weight, n, max_candidates
        self._ids = [item.id for item in listed]
        self._texts = [item.text for item in listed]
        self._payloads = [item.payload for item in listed]
        self._scopes = [item.scope for item in listed]
        self._norms: list[str] = []
        self._build_postings(listed)
        self._embedder: Embedder | None = None
        self._vectors: np.ndarray | None = None
        logger.debug("n-gram index over %d items in %.2f s", len(listed), _since(started))
        if embedder is not None:
            self._embed(embedder, reuse)

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def embedded(self) -> bool:
        """Whether item embeddings are present (then scores use the cosine)."""
        return self._vectors is not None

    def in_scope(self, scope: Sequence[str], *, exact: bool = False) -> dict[str, dict[str, Any]]:
        """Payloads by id of the items whose scope starts with (``exact``: equals) ``scope``."""
        wanted = tuple(scope)
        lo, hi = self._range(wanted)
        rows = (row for row in range(lo, hi) if not exact or self._scopes[row] == wanted)
        return {self._ids[row]: self._payloads[row] for row in rows}

    def missing_embeddings(self, reuse: FuzzyIndex | None = None) -> int:
        """How many distinct texts ``with_embeddings(..., reuse=reuse)`` would embed."""
        known = set(reuse._norms) if reuse is not None and reuse.embedded else set()
        return len(set(self._norms) - known)

    def with_embeddings(self, embedder: Embedder, reuse: FuzzyIndex | None = None) -> FuzzyIndex:
        """A copy of this index with item embeddings added (the n-gram arrays are shared)."""
        twin = copy.copy(self)
        twin._embed(embedder, reuse)
        return twin

    # ------------------------------------------------------------------- building
    def _build_postings(self, items: list[FuzzyItem]) -> None:
        vocabulary: dict[str, int] = {}
        columns: list[int] = []
        sizes = np.zeros(len(items), dtype=np.int32)
        for row, item in enumerate(items):
            words = tokens(item.text)
            self._norms.append(" ".join(words))
            grams = ngrams_of_tokens(words, self.n)
            sizes[row] = len(grams)
            columns.extend(vocabulary.setdefault(gram, len(vocabulary)) for gram in grams)
        gram_ids = np.asarray(columns, dtype=np.int64)
        rows = np.repeat(np.arange(len(items), dtype=np.int32), sizes)
        order = np.argsort(gram_ids, kind="stable")  # rows stay ascending within a gram
        self._vocabulary = vocabulary
        self._posting_rows = rows[order]
        per_gram = np.bincount(gram_ids, minlength=len(vocabulary))
        self._indptr = np.concatenate(([0], np.cumsum(per_gram)))
        self._sizes = sizes

    def _embed(self, embedder: Embedder, reuse: FuzzyIndex | None) -> None:
        started = time.perf_counter()
        unique = list(dict.fromkeys(self._norms))
        known: dict[str, np.ndarray] = {}
        if reuse is not None and reuse._vectors is not None and reuse._embedder is embedder:
            rows = {text: row for row, text in enumerate(reuse._norms)}
            known = {text: reuse._vectors[rows[text]] for text in unique if text in rows}
        missing = [text for text in unique if text not in known]
        if missing:
            known.update(zip(missing, embedder.embed(missing), strict=True))
        table = np.zeros((len(unique), embedder.dimension), dtype=np.float16)
        for position, text in enumerate(unique):
            table[position] = known[text]
        position_of = {text: position for position, text in enumerate(unique)}
        inverse = np.fromiter((position_of[t] for t in self._norms), np.int64, len(self._norms))
        self._vectors, self._embedder = table[inverse], embedder
        logger.info(
            "embedded %d items (%d new texts) in %.1f s", len(self), len(missing), _since(started)
        )

    # ------------------------------------------------------------------- searching
    def search(
        self,
        query: str,
        k: int = 10,
        *,
        min_score: float = 0.0,
        scope: Sequence[str] = (),
    ) -> list[FuzzyMatch]:
        """The best ``k`` distinct ids for ``query``, highest score first.

        Args:
            query: free text (normalised like the items).
            k: at most this many matches.
            min_score: matches scoring below this are left out.
            scope: only items whose scope starts with these values, e.g. ``("sales",)``.

        Returns:
            Matches with ``score``, ``containment`` and ``cosine`` (None without embeddings).
        """
        rows, containment, cosine, coverage = self._score_candidates(query, tuple(scope))
        if rows.size == 0:
            return []
        score = containment if cosine is None else self._fuse(containment, cosine)
        order = np.lexsort((-coverage, -score))
        matches: list[FuzzyMatch] = []
        seen: set[str] = set()
        for index in order:
            if score[index] < min_score or len(matches) >= k:
                break
            row = int(rows[index])
            if self._ids[row] in seen:
                continue
            seen.add(self._ids[row])
            matches.append(
                FuzzyMatch(
                    id=self._ids[row],
                    text=self._texts[row],
                    payload=self._payloads[row],
                    score=float(score[index]),
                    containment=float(containment[index]),
                    cosine=None if cosine is None else float(cosine[index]),
                )
            )
        return matches

    def candidates(self, query: str, *, scope: Sequence[str] = ()) -> np.ndarray:
        """The rows a search for ``query`` scores (at most ``2 · max_candidates``)."""
        return self._score_candidates(query, tuple(scope))[0]

    def _fuse(self, containment: np.ndarray, cosine: np.ndarray) -> np.ndarray:
        return self.weight * containment + (1.0 - self.weight) * np.maximum(cosine, 0.0)

    def _score_candidates(
        self, query: str, scope: tuple[str, ...]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
        words = tokens(query)
        grams = sorted(ngrams_of_tokens(words, self.n))[:MAX_QUERY_GRAMS]
        lo, hi = self._range(scope)
        if not words or hi <= lo:
            empty = np.zeros(0)
            return empty.astype(np.int64), empty, None, empty
        hit_rows, overlaps = self._overlaps(grams, lo, hi)
        coverage_all = overlaps / np.maximum(self._sizes[hit_rows], 1)
        picked = hit_rows[_top(overlaps + coverage_all, self.max_candidates)]  # ties: coverage
        cosine_all = None
        if self._vectors is not None and self._embedder is not None and self.weight < 1.0:
            query_vector = self._embedder.embed([" ".join(words)])[0]
            cosine_all = _cosines(self._vectors[lo:hi], query_vector)  # one pass over all rows
            picked = np.union1d(picked, _top(cosine_all, self.max_candidates) + lo)
        counts = np.zeros(picked.size, dtype=np.int64)
        if hit_rows.size:  # semantic candidates may share no n-gram with the query
            slot = np.minimum(np.searchsorted(hit_rows, picked), hit_rows.size - 1)
            found = hit_rows[slot] == picked
            counts[found] = overlaps[slot[found]]
        containment = counts / max(len(grams), 1)
        coverage = counts / np.maximum(self._sizes[picked], 1)
        cosine = None if cosine_all is None else cosine_all[picked - lo].astype(np.float64)
        return picked, containment, cosine, coverage

    def _overlaps(self, grams: list[str], lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows in ``[lo, hi)`` sharing n-grams with the query (sorted), and how many each."""
        lists = []
        for gram in grams:
            gram_id = self._vocabulary.get(gram)
            if gram_id is None:
                continue
            postings = self._posting_rows[self._indptr[gram_id] : self._indptr[gram_id + 1]]
            if lo > 0 or hi < len(self):
                postings = postings[np.searchsorted(postings, lo) : np.searchsorted(postings, hi)]
            lists.append(postings)
        if not lists:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        merged = np.concatenate(lists)
        if merged.size * 8 < hi - lo:  # few postings: sort them instead of counting every row
            unique, counts = np.unique(merged, return_counts=True)
            return unique.astype(np.int64), counts
        dense = np.bincount(merged - lo, minlength=hi - lo)
        rows = np.flatnonzero(dense)
        return rows + lo, dense[rows]

    def _range(self, scope: tuple[str, ...]) -> tuple[int, int]:
        if not scope:
            return 0, len(self)
        lo = bisect.bisect_left(self._scopes, scope)
        return lo, bisect.bisect_left(self._scopes, (*scope, _LAST), lo=lo)


def _cosines(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``matrix @ vector`` for float16 rows, as float32 (error below 1e-3 for unit vectors).

    torch does the product: numpy has no fast float16 kernel, and numpy's float32 product
    runs on OpenBLAS threads that fight the embedder's OpenMP threads for the same cores
    (measured: the query embedding went from 10 ms to 20-60 ms between the two).
    """
    import torch  # a dependency of sentence-transformers; imported on first semantic search

    query = torch.from_numpy(np.ascontiguousarray(vector, dtype=np.float16))
    return torch.mv(torch.from_numpy(matrix), query).float().numpy()


def _top(keys: np.ndarray, limit: int) -> np.ndarray:
    """Positions of the ``limit`` largest ``keys`` (all when there are fewer), ascending."""
    if keys.size <= limit:
        return np.arange(keys.size)
    return np.sort(np.argpartition(keys, keys.size - limit)[keys.size - limit :])


def _since(started: float) -> float:
    return time.perf_counter() - started
