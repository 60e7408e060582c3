"""Every index over one knowledge store, built together, kept current, swapped atomically.

:class:`IndexSet` is the one place the indices are assembled: the server, the benchmark
systems and ``bench.linking`` all build theirs here, so a benchmark measures the retriever the
server serves. One generation (:class:`BuiltIndices`) holds the string index, the graph, and,
with an embedder, the vector index (searched by ``POST /v1/knowledge/search``) and the
experience index (the few-shot examples). The facet index reads the store directly and needs
no building.

- :meth:`IndexSet.build` builds synchronously (CLI, benchmarks, tests).
- :meth:`IndexSet.start` builds in a background thread, then follows the store's ``version``
  every ``refresh_s`` seconds (the server); :meth:`IndexSet.stop` ends that.
- :meth:`IndexSet.rebuild` builds a new generation from scratch and swaps it in at once (the
  ``reindex`` job); lookups keep using the old generation meanwhile and never wait.
- :meth:`IndexSet.refresh` applies the store's writes since the indices' version.
- :meth:`IndexSet.retriever` is a fused :class:`~indices.retriever.Retriever` over the
  current generation (cheap; make one per question). When the set follows the store in the
  background, the retriever does not refresh itself; otherwise each ``retrieve`` refreshes the
  set first, so what was just written is found.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from indices.embeddings import Embedder
from indices.experience_index import ExperienceIndex
from indices.facet import FacetIndex
from indices.graph import GraphIndex
from indices.retriever import RetrievalOptions, Retriever
from indices.sketch import QuerySketcher
from indices.string import StringIndex
from indices.vector import VectorIndex
from kb.store import KnowledgeStore

log = logging.getLogger(__name__)
Progress = Callable[[float, str], None]


class IndexNotReadyError(RuntimeError):
    """The index asked for is still being built, failed to build, or is not configured
    (``configured=False``: vector search without an embedder)."""

    def __init__(self, message: str, *, configured: bool = True) -> None:
        super().__init__(message)
        self.configured = configured


@dataclass(frozen=True)
class BuiltIndices:
    """One generation of indices, built from the same store version."""

    strings: StringIndex
    graph: GraphIndex
    vectors: VectorIndex | None
    experiences: ExperienceIndex | None

    def close(self) -> None:
        if self.experiences is not None:
            self.experiences.close()  # no refit of an index nobody reads


class IndexSet:
    """The indices over ``store`` (see the module docstring).

    Args:
        store: the knowledge store.
        embedder: embeds entries and questions; None builds neither the vector nor the
            experience index (string, graph and facet retrieval only).
        vectors: build the vector index (with an embedder). The retriever uses it for
            experiences only when there is no experience index.
        experiences: build the experience index (with an embedder).
        refresh_s: how often :meth:`start`'s thread checks the store version.
        refit_interval_s: least time between two refits of the experience metric.
        retrieval: the options of the retrievers :meth:`retriever` makes when it is given none
            (the server's ``[retrieval]`` settings; default :class:`RetrievalOptions`).
    """

    def __init__(
        self,
        store: KnowledgeStore,
        embedder: Embedder | None = None,
        *,
        vectors: bool = True,
        experiences: bool = True,
        refresh_s: float = 1.0,
        refit_interval_s: float = 0.0,
        retrieval: RetrievalOptions | None = None,
    ) -> None:
        self.store, self.embedder = store, embedder
        self.retrieval = retrieval or RetrievalOptions()
        self.with_vectors, self.with_experiences = vectors, experiences
        self.refresh_s, self.refit_interval_s = refresh_s, refit_interval_s
        self.facets = FacetIndex(store)
        self._built: BuiltIndices | None = None
        self._error: str | None = None
        self._ready = threading.Event()
        self._settled = threading.Event()  # built, failed, or stopped
        self._stopping = threading.Event()
        self._refresh_lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    @classmethod
    def build(
        cls,
        store: KnowledgeStore,
        embedder: Embedder | None = None,
        *,
        progress: Progress | None = None,
        **options: Any,
    ) -> IndexSet:
        """A set built now (``options`` as for the constructor)."""
        indices = cls(store, embedder, **options)
        indices.rebuild(progress)
        return indices

    # ---------------------------------------------------------------- lifecycle
    @property
    def following(self) -> bool:
        """Whether a background thread keeps the indices current (:meth:`start`)."""
        return bool(self._threads)

    def start(self) -> None:
        """Build in the background, then follow the store."""
        if self._threads:
            return
        self._stopping.clear()
        if self._built is None:
            self._settled.clear()  # stopped before the first build: it starts again
        thread = threading.Thread(target=self._load_and_follow, name="almanac-indices", daemon=True)
        self._threads.append(thread)
        thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop following the store and release the current generation's timers."""
        self._stopping.set()
        self._settled.set()  # nobody waits for a build that will not come
        for thread in self._threads:
            thread.join(timeout)
        self._threads = []
        built = self._built
        if built is not None:
            built.close()

    def wait_ready(self, timeout: float | None = None) -> bool:
        return self._ready.wait(timeout)

    def wait_settled(self, timeout: float | None = None) -> bool:
        """Wait until the first build is done or has failed (or the set stopped); whether
        it is (then :meth:`current` answers or raises at once)."""
        return self._settled.wait(timeout)

    def status(self) -> dict[str, Any]:
        built = self._built
        return {
            "ready": built is not None,
            "error": self._error,
            "version": built.strings.version if built else None,
            "patterns": built.strings.pattern_count if built else None,
            "vectors": self.embedder is not None and self.with_vectors,
        }

    def _load_and_follow(self) -> None:
        if self._built is None:
            try:
                self.rebuild()
            except Exception as exc:  # reported by status(); a rebuild can try again
                log.exception("building the indices failed")
                self._error = f"{type(exc).__name__}: {exc}"
                self._settled.set()
        while not self._stopping.wait(self.refresh_s):
            try:
                self.refresh()
            except Exception:
                log.exception("refreshing the indices failed")

    def rebuild(self, progress: Progress | None = None) -> dict[str, Any]:
        """Build every index from the store and swap them in at once; a summary."""
        report = progress or (lambda _f, _m: None)
        started = time.perf_counter()
        report(0.05, "building the string index")
        strings = StringIndex.from_store(self.store)
        report(0.35, "building the graph index")
        graph = GraphIndex.from_store(self.store)
        vectors = experiences = None
        if self.embedder is not None and self.with_vectors:
            report(0.5, "building the vector index")
            sketcher = QuerySketcher(strings, lambda uid: node_type(graph, uid))
            vectors = VectorIndex.from_store(self.store, self.embedder, sketch=sketcher.sketch)
        if self.embedder is not None and self.with_experiences:
            report(0.8, "building the experience index")
            experiences = ExperienceIndex.from_store(
                self.store, self.embedder, strings, refit_interval_s=self.refit_interval_s
            )
        with self._refresh_lock:
            replaced = self._built
            self._built = BuiltIndices(strings, graph, vectors, experiences)
            if replaced is not None:
                replaced.close()
            self._error = None
        self._ready.set()
        self._settled.set()
        summary = {
            "version": strings.version,
            "patterns": strings.pattern_count,
            "vectors": vectors.size() if vectors else None,
            "experiences": experiences.size() if experiences else None,
            "seconds": round(time.perf_counter() - started, 3),
        }
        report(1.0, "indices swapped in")
        log.info("indices built: %s", summary)
        return summary

    def refresh(self, *, wait: bool = False) -> bool:
        """Apply the store's writes since the indices' version (one query when nothing
        moved); ``wait`` for the string index's automaton. True when strings changed."""
        built = self._built
        if built is None:
            return False
        with self._refresh_lock:
            built = self._built
            assert built is not None
            changed = built.strings.refresh(self.store)  # first: experiences sketch with it
            built.graph.refresh(self.store)
            if built.vectors is not None:
                built.vectors.refresh(self.store)
            if built.experiences is not None:
                built.experiences.refresh(self.store)
        if wait:
            built.strings.wait()
        return changed

    # ---------------------------------------------------------------- accessors
    def current(self) -> BuiltIndices:
        """The current generation; :class:`IndexNotReadyError` before the first build."""
        built = self._built
        if built is None:
            raise IndexNotReadyError(self._error or "the indices are still being built")
        return built

    @property
    def strings(self) -> StringIndex:
        return self.current().strings

    @property
    def graph(self) -> GraphIndex:
        return self.current().graph

    @property
    def vectors(self) -> VectorIndex:
        vectors = self.current().vectors
        if vectors is None:
            raise IndexNotReadyError("vector search is off (no embedder)", configured=False)
        return vectors

    @property
    def experiences(self) -> ExperienceIndex | None:
        return self.current().experiences

    def retriever(self, options: RetrievalOptions | None = None) -> Retriever:
        """A fused retriever over the current generation (see the module docstring), with
        ``options`` or else the set's :attr:`retrieval` options."""
        built = self.current()
        return Retriever(
            self.store,
            built.strings,
            built.graph,
            built.vectors,
            options or self.retrieval,
            built.experiences,
            facets=self.facets,
            refresh=self._refresh_for_retriever,
        )

    def _refresh_for_retriever(self) -> None:
        if not self.following:
            self.refresh()


def node_type(graph: GraphIndex, uid: str) -> str | None:
    """The UKF type of graph node ``uid`` (None when it is not in the graph)."""
    return graph.node(uid).get("type") if uid in graph else None
