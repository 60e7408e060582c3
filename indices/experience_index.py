"""The experience index: the nearest experiences by SQL shape, for few-shot examples.

Each experience is embedded in three views of its question, concatenated:

1. ``typed``: values replaced by their column in words ("biggest city in state name"),
2. ``values``: values replaced by ``[ENUM]``,
3. ``question``: the question as asked,

(:func:`indices.sketch.value_labels`; table and column words stay, they decide the SQL's shape).
The concatenation is mapped by a :class:`~indices.experience_metric.SkeletonMetric` learned from
the labeled experiences, whose SQL skeletons say which questions need the same query shape, and
searched by cosine (faiss). The metric is refitted when the number of labeled experiences has
moved by ``refit_growth`` since the last fit, and at most once per ``refit_interval_s`` (a
refit due sooner runs in the background when the interval is over): learning it takes about a
second of CPU at 10k experiences, and a server that labels an experience with every feedback
would otherwise refit without pause. Searches do not wait for a fit; in between, new
experiences are mapped by the current metric.
Schema changes (new tables, columns, values) re-sketch every experience; texts whose sketch did
not change are not embedded again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict, Unpack

import numpy as np
from tqdm import tqdm

from indices.embeddings import Embedder
from indices.experience_metric import DEFAULT_DIMENSIONS, DEFAULT_SHRINKAGE, SkeletonMetric
from indices.experience_skeleton import skeleton_of
from indices.experience_spaces import ExperienceSpaces
from indices.hits import Hit
from indices.refit_schedule import RefitSchedule
from indices.sketch import Entity, QuerySketcher, entity_of, value_labels
from indices.string import StringIndex
from indices.sync import changes_since

if TYPE_CHECKING:
    from kb.store import KnowledgeStore
    from ukf import BaseUKF

log = logging.getLogger(__name__)
VIEWS = ("typed", "values", "question")
SKETCHED_TYPES = frozenset({"table", "column", "enum", "metric"})
DEFAULT_REFIT_GROWTH = 0.1
_PROGRESS_FROM = 1000  # show a progress bar when sketching at least this many questions


class ExperienceOptions(TypedDict, total=False):
    """Keyword options of :class:`ExperienceIndex` (see its constructor)."""

    shrinkage: float
    dimensions: int | None
    refit_growth: float
    refit_interval_s: float
    threads: int | None


@dataclass
class _Experience:
    question: str
    databases: tuple[str, ...]
    skeleton: str | None  # labeled experiences only
    views: tuple[str, ...]
    vector: np.ndarray  # the views' embeddings concatenated, before the metric

    def embedded(self) -> dict[str, np.ndarray]:
        """Each view text's embedding."""
        parts = np.split(self.vector, len(self.views))
        return dict(zip(self.views, parts, strict=True))


class ExperienceIndex:
    """Skeleton-aware nearest-experience search.

    Args:
        embedder: Embeds the three views (e.g. MiniLM).
        strings: The synonym index the question's values are found with (shared with the
            retriever; its owner keeps it up to date).
        shrinkage: See :meth:`SkeletonMetric.fit`.
        dimensions: See :meth:`SkeletonMetric.fit`.
        refit_growth: Relative change in labeled experiences that triggers a refit.
        refit_interval_s: Least time between two fits (0: refit as soon as one is due).
        threads: faiss OpenMP threads per search (see :mod:`indices.faiss_threads`).
    """

    def __init__(
        self,
        embedder: Embedder,
        strings: StringIndex,
        *,
        shrinkage: float = DEFAULT_SHRINKAGE,
        dimensions: int | None = DEFAULT_DIMENSIONS,
        refit_growth: float = DEFAULT_REFIT_GROWTH,
        refit_interval_s: float = 0.0,
        threads: int | None = 1,
    ) -> None:
        self.embedder = embedder
        self.strings = strings
        self.shrinkage, self.dimensions, self.refit_growth = shrinkage, dimensions, refit_growth
        self.metric = SkeletonMetric()
        self._entities: dict[str, Entity] = {}
        labels = {"typed": True, "values": False}
        self._sketchers = {
            view: QuerySketcher(strings, label=value_labels(self._entities.get, typed=typed))
            for view, typed in labels.items()
        }
        self._experiences: dict[str, _Experience] = {}
        self._spaces = ExperienceSpaces(len(VIEWS) * embedder.dimension, threads=threads)
        self._fitted_on = 0
        self._lock = threading.RLock()
        self._fit_lock = threading.Lock()
        self._refits = RefitSchedule(
            self.fit, self._refit_due, refit_interval_s, name="almanac-experience-refit"
        )
        self.version = 0

    # ------------------------------------------------------------------ views
    def views(self, question: str) -> tuple[str, ...]:
        """The texts a question is embedded by, in :data:`VIEWS` order."""
        matches = self.strings.search(question, mode="longest")
        sketches = {view: s.sketch(question, matches) for view, s in self._sketchers.items()}
        return tuple(sketches.get(view, question) for view in VIEWS)

    def _embed(
        self, questions: list[str], known: dict[str, np.ndarray]
    ) -> list[tuple[tuple[str, ...], np.ndarray]]:
        """Each question's views and their concatenated embeddings (texts in ``known`` and
        repeated texts are embedded once)."""
        bar = tqdm(questions, desc="sketch experiences", disable=len(questions) < _PROGRESS_FROM)
        views = [self.views(q) for q in bar]
        missing = list(dict.fromkeys(t for texts in views for t in texts if t not in known))
        if missing:
            vectors = np.asarray(self.embedder.embed(missing), dtype=np.float32)
            known = {**known, **dict(zip(missing, vectors, strict=True))}
        return [(texts, np.concatenate([known[t] for t in texts])) for texts in views]

    # ------------------------------------------------------------------ writing
    def add(self, entries: Iterable[BaseUKF]) -> None:
        """Add or replace entries: experiences are indexed, schema entries used for sketching."""
        batch = list(entries)
        schema = {e.id: entity_of(e) for e in batch if e.type in SKETCHED_TYPES}
        experiences = [e for e in batch if e.type == "experience"]
        with self._lock:
            changed = any(self._entities.get(uid) != entity for uid, entity in schema.items())
            self._entities.update(schema)
            if changed and self._experiences:
                self._resketch()
            if not experiences:
                return
            known = {}
            for entry in experiences:
                if entry.id in self._experiences:
                    known.update(self._experiences[entry.id].embedded())
            self._drop([e.id for e in experiences])
            questions = [e.content_resources.get("question") or e.name for e in experiences]
            embedded = self._embed(questions, known)
            for entry, question, (views, vector) in zip(
                experiences, questions, embedded, strict=True
            ):
                databases = tuple(entry.tag_values("DATABASE"))
                self._experiences[entry.id] = _Experience(
                    question, databases, skeleton_of(entry), views, vector
                )
            self._insert([e.id for e in experiences])  # searchable at once, mapped as now
            due = self._refit_due()
        if due:
            self._refits.request()

    def remove(self, ukf_ids: Iterable[str]) -> None:
        with self._lock:
            ids = list(ukf_ids)
            dropped = [self._entities.pop(uid, None) for uid in ids]
            schema_changed = any(entity is not None for entity in dropped)
            self._drop(ids)
            if schema_changed and self._experiences:
                self._resketch()
            elif self._refit_due():
                self._refits.request()

    def _drop(self, ukf_ids: list[str]) -> None:
        for uid in ukf_ids:
            self._experiences.pop(uid, None)
        self._spaces.remove(ukf_ids)

    def _insert(self, ukf_ids: list[str]) -> None:
        """Map the experiences by the current metric and add them to the faiss spaces."""
        if not ukf_ids:
            return
        rows = [self._experiences[uid] for uid in ukf_ids]
        mapped = self.metric.transform(np.stack([row.vector for row in rows]))
        databases = [row.databases for row in rows]
        self._spaces.add(ukf_ids, mapped, databases, [row.skeleton is not None for row in rows])

    def _resketch(self) -> None:
        """Schema entries changed: sketch every experience again and re-map them."""
        self.strings.wait()  # the owner refreshed the string index; let its rebuild land
        known: dict[str, np.ndarray] = {}
        for experience in self._experiences.values():
            known.update(experience.embedded())
        rows = list(self._experiences.values())
        embedded = self._embed([row.question for row in rows], known)
        for row, (views, vector) in zip(rows, embedded, strict=True):
            row.views, row.vector = views, vector
        self.fit()

    def _labeled(self) -> list[str]:
        return [uid for uid, e in self._experiences.items() if e.skeleton is not None]

    def _refit_due(self) -> bool:
        with self._lock:  # also asked by the refit timer's thread
            labeled = len(self._labeled())
            return abs(labeled - self._fitted_on) > self.refit_growth * self._fitted_on

    def close(self) -> None:
        """Cancel a deferred refit (the index is being replaced or the server stops)."""
        self._refits.close()

    @property
    def refit_pending(self) -> bool:
        """A refit is due and waits for ``refit_interval_s``."""
        return self._refits.pending

    def fit(self) -> SkeletonMetric:
        """Learn the metric from the labeled experiences now and re-map every experience.

        The metric (an eigendecomposition: about a second on 2 cores) is learned outside the
        index lock from a snapshot, so searches go on meanwhile; the re-mapping is swapped in
        under the lock with whatever was added since. A fit already running is not repeated.
        """
        if not self._fit_lock.acquire(blocking=False):
            return self.metric
        self._refits.fitting()
        try:
            with self._lock:
                labeled = self._labeled()
                vectors = (
                    np.stack([self._experiences[uid].vector for uid in labeled])
                    if labeled
                    else None
                )
                skeletons = [self._experiences[uid].skeleton or "" for uid in labeled]
            metric = (
                SkeletonMetric.fit(
                    vectors, skeletons, shrinkage=self.shrinkage, dimensions=self.dimensions
                )
                if vectors is not None
                else SkeletonMetric()
            )
            with self._lock:
                self.metric = metric
                self._fitted_on = len(labeled)
                width = self.metric.dimension or len(VIEWS) * self.embedder.dimension
                self._spaces.reset(width)
                self._insert(list(self._experiences))
                return self.metric
        finally:
            self._fit_lock.release()

    # ------------------------------------------------------------ store syncing
    @classmethod
    def from_store(
        cls,
        store: KnowledgeStore,
        embedder: Embedder,
        strings: StringIndex,
        **options: Unpack[ExperienceOptions],
    ) -> ExperienceIndex:
        """Index the store's experiences (the string index must already reflect the store).

        ``options`` are the constructor's (``shrinkage``, ``dimensions``, ``refit_growth``,
        ``refit_interval_s``).
        """
        index = cls(embedder, strings, **options)
        index.version = store.version
        entries = list(store.iterate())
        index.add([e for e in entries if e.type in SKETCHED_TYPES])
        index.add([e for e in entries if e.type == "experience"])
        log.info(
            "experience index: %d experiences, metric fitted on %d (%d skeletons with 2+)",
            index.size(),
            index.metric.samples,
            index.metric.groups,
        )
        return index

    def refresh(self, store: KnowledgeStore) -> bool:
        """Apply the store's writes since :attr:`version`; True when something changed."""
        changes = changes_since(store, self.version)
        if changes is None:
            return False
        with self._lock:
            self.remove(changes.removed)
            self.add(changes.active)
            self.version = changes.version
        return True

    # ------------------------------------------------------------------ reading
    def size(self) -> int:
        return len(self._experiences)

    def search(
        self,
        question: str,
        *,
        k: int = 3,
        database: str | None = None,
        labeled_first: bool = True,
    ) -> list[Hit]:
        """The ``k`` experiences nearest to ``question`` (of ``database`` or of none).

        With ``labeled_first``, labeled (or verified) experiences come before unlabeled ones
        (every question asked is logged unlabeled; those must not crowd out the examples).
        """
        views = self.views(question)
        distinct = list(dict.fromkeys(views))  # no value named: the three views are one text
        embedded = np.asarray(self.embedder.embed(distinct), dtype=np.float32)
        by_text = dict(zip(distinct, embedded, strict=True))
        query = np.concatenate([by_text[text] for text in views])[None, :]
        if k <= 0:
            return []
        with self._lock:
            mapped = self.metric.transform(query)
            nearest = self._spaces.nearest
            found = nearest("labeled", mapped, k, database) if labeled_first else []
            if len(found) < k:
                chosen = {uid for uid, _ in found}
                more = nearest("all", mapped, k + len(found), database)
                found += [(uid, score) for uid, score in more if uid not in chosen]
            return [
                Hit(
                    uid,
                    score,
                    "vector",
                    phrase="experience",
                    detail={"index": "experience", "similarity": score},
                )
                for uid, score in found[:k]
            ]
