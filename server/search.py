"""The server's indices over the knowledge store, and the four knowledge-search modes.

:class:`SearchIndices` owns one string, graph and (optional) vector and experience index.
They are built in a background thread when the server starts (a search before that answers
503), follow the store's ``version`` from a refresher thread, and are rebuilt from scratch and
swapped in atomically by the ``reindex`` job; a search never waits for a rebuild. The ask
pipeline gets a :class:`indices.retriever.Retriever` over the same indices from
:meth:`SearchIndices.retriever`.

:func:`search` answers ``POST /v1/knowledge/search``: ``string`` (Aho-Corasick spans),
``facet`` (tags and filters, in SQL), ``vector`` (embeddings) and ``graph`` (expansion from
seed entries). Every hit is checked against the caller's visibility before it is returned.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from indices.experience_index import ExperienceIndex
from indices.facet import FacetIndex
from indices.graph import GraphIndex
from indices.hits import Hit
from indices.retriever import RetrievalOptions, Retriever
from indices.sketch import QuerySketcher
from indices.string import StringIndex
from indices.vector import VectorIndex
from kb.embeddings import Embedder
from kb.store import KnowledgeStore
from server.access import visible_documents
from server.auth import Identity

log = logging.getLogger(__name__)
Progress = Callable[[float, str], None]
BRIEF_CHARS = 200


class IndexNotReadyError(RuntimeError):
    """The index asked for is still being built (503), or not configured (``configured``)."""

    def __init__(self, message: str, *, configured: bool = True) -> None:
        super().__init__(message)
        self.configured = configured


@dataclass
class _Built:
    strings: StringIndex
    graph: GraphIndex
    vectors: VectorIndex | None
    experiences: ExperienceIndex | None


class SearchIndices:
    """String, graph and vector indices that follow one store.

    Args:
        store: the knowledge store.
        embedder: the vector index's embedder; None disables vector search.
        refresh_s: how often the refresher thread checks the store version.
        refit_interval_s: least time between two refits of the experience metric.
    """

    def __init__(
        self,
        store: KnowledgeStore,
        embedder: Embedder | None,
        *,
        refresh_s: float = 1.0,
        refit_interval_s: float = 0.0,
    ) -> None:
        self.store, self.embedder, self.refresh_s = store, embedder, refresh_s
        self.refit_interval_s = refit_interval_s
        self.facets = FacetIndex(store)
        self._built: _Built | None = None
        self._error: str | None = None
        self._ready = threading.Event()
        self._stopping = threading.Event()
        self._refresh_lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> None:
        """Build in the background, then follow the store."""
        if self._threads:
            return
        thread = threading.Thread(target=self._load_and_follow, name="almanac-indices", daemon=True)
        thread.start()
        self._threads.append(thread)

    def stop(self, timeout: float = 5.0) -> None:
        self._stopping.set()
        for thread in self._threads:
            thread.join(timeout)
        self._threads = []
        built = self._built
        if built is not None and built.experiences is not None:
            built.experiences.close()

    def wait_ready(self, timeout: float | None = None) -> bool:
        return self._ready.wait(timeout)

    def status(self) -> dict[str, Any]:
        built = self._built
        return {
            "ready": built is not None,
            "error": self._error,
            "version": built.strings.version if built else None,
            "patterns": built.strings.pattern_count if built else None,
            "vectors": self.embedder is not None,
        }

    def _load_and_follow(self) -> None:
        try:
            self.rebuild()
        except Exception as exc:  # reported by /v1/health; the reindex job can try again
            log.exception("building the indices failed")
            self._error = f"{type(exc).__name__}: {exc}"
        while not self._stopping.wait(self.refresh_s):
            try:
                self.refresh()
            except Exception:
                log.exception("refreshing the indices failed")

    def rebuild(self, progress: Progress | None = None) -> dict[str, Any]:
        """Build every index from the store and swap them in at once."""
        report = progress or (lambda _f, _m: None)
        started = time.perf_counter()
        report(0.05, "building the string index")
        strings = StringIndex.from_store(self.store)
        report(0.35, "building the graph index")
        graph = GraphIndex.from_store(self.store)
        vectors = experiences = None
        if self.embedder is not None:
            report(0.5, "building the vector index")
            sketcher = QuerySketcher(strings, lambda uid: _node_type(graph, uid))
            vectors = VectorIndex.from_store(self.store, self.embedder, sketch=sketcher.sketch)
            report(0.8, "building the experience index")
            experiences = ExperienceIndex.from_store(
                self.store, self.embedder, strings, refit_interval_s=self.refit_interval_s
            )
        with self._refresh_lock:
            replaced, self._built = self._built, _Built(strings, graph, vectors, experiences)
            if replaced is not None and replaced.experiences is not None:
                replaced.experiences.close()  # no refit of an index nobody reads
            self._error = None
        self._ready.set()
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
        """Apply the store's writes since the indices' version; ``wait`` for the automaton."""
        built = self._built
        if built is None:
            return False
        with self._refresh_lock:
            changed = built.strings.refresh(self.store)
            built.graph.refresh(self.store)
            if built.vectors is not None:
                built.vectors.refresh(self.store)
            if built.experiences is not None:
                built.experiences.refresh(self.store)
        if wait:
            built.strings.wait()
        return changed

    # ---------------------------------------------------------------- accessors
    def _current(self) -> _Built:
        built = self._built
        if built is None:
            raise IndexNotReadyError(self._error or "the indices are still being built")
        return built

    @property
    def strings(self) -> StringIndex:
        return self._current().strings

    @property
    def graph(self) -> GraphIndex:
        return self._current().graph

    @property
    def vectors(self) -> VectorIndex:
        vectors = self._current().vectors
        if vectors is None:
            raise IndexNotReadyError(
                "vector search is off (ALMANAC_EMBEDDER=none)", configured=False
            )
        return vectors

    def retriever(self, options: RetrievalOptions | None = None) -> Retriever:
        """A fused retriever over the current indices (cheap; make one per question).

        It does not refresh the indices itself: the refresher thread follows the store every
        ``refresh_s``, so a question never pays for embedding what was just written."""
        built = self._current()
        return _FollowingRetriever(
            self.store, built.strings, built.graph, built.vectors, options, built.experiences
        )


class _FollowingRetriever(Retriever):
    """A retriever whose indices are kept current by :class:`SearchIndices`' refresher."""

    def refresh(self) -> None:
        return None


def _node_type(graph: GraphIndex, uid: str) -> str | None:
    return graph.node(uid).get("type") if uid in graph else None


class SearchRequest(BaseModel):
    """Body of ``POST /v1/knowledge/search``."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["string", "facet", "vector", "graph"]
    query: str | None = Field(default=None, description="text (string and vector modes)")
    tags: list[str] | dict[str, str | list[str]] | None = Field(
        default=None, description="[SLOT:value] list or {slot: values} (facet mode)"
    )
    type: list[str] | None = Field(default=None, description="keep only these UKF types")
    seeds: list[str] | None = Field(default=None, description="start entries (graph mode)")
    hops: int = Field(default=2, ge=1, le=4)
    relations: list[str] | None = None
    direction: Literal["out", "in", "both"] = "both"
    serializers: list[str] = Field(default_factory=lambda: ["query", "name_description"])
    mmr: bool = False
    conflicts: Literal["all", "longest"] = "all"
    limit: int = Field(default=20, ge=1, le=500)
    include: Literal["brief", "entry", "id"] = "brief"

    @model_validator(mode="after")
    def _mode_inputs(self) -> SearchRequest:
        if self.mode in ("string", "vector") and not (self.query and self.query.strip()):
            raise ValueError(f"mode {self.mode!r} needs a non-empty 'query'")
        if self.mode == "graph" and not self.seeds:
            raise ValueError("mode 'graph' needs 'seeds' (entry ids)")
        if self.mode == "facet" and not (self.tags or self.type):
            raise ValueError("mode 'facet' needs 'tags' or 'type'")
        return self


def search(indices: SearchIndices, request: SearchRequest, identity: Identity) -> dict[str, Any]:
    """Run one search for ``identity``: hits it may see, with their entries."""
    store = indices.store
    if request.mode == "graph":
        seeds = list(visible_documents(store, request.seeds or [], identity))
        request = request.model_copy(update={"seeds": seeds})
    hits = _raw_hits(indices, request, identity)
    ids = [h.ukf_id for h in hits]
    # facet hits come from a query that applied the caller's visibility already; the others
    # are filtered by it here. Stored documents, not models: they are only serialized.
    entries = (
        store.get_documents(ids)
        if request.mode == "facet"
        else visible_documents(store, ids, identity)
    )
    kept = [h for h in hits if h.ukf_id in entries][: request.limit]
    return {
        "mode": request.mode,
        "count": len(kept),
        "hits": [_hit_json(hit, entries[hit.ukf_id], request.include) for hit in kept],
    }


def _raw_hits(indices: SearchIndices, request: SearchRequest, identity: Identity) -> list[Hit]:
    if request.mode == "facet":
        criteria = {"type": request.type} if request.type else {}
        return indices.facets.search(
            request.tags, reader=identity.reader, limit=request.limit, **criteria
        )
    if request.mode == "string":
        hits = indices.strings.search_hits(request.query or "", mode=request.conflicts)
        if request.type:
            graph = indices.graph
            hits = [h for h in hits if _node_type(graph, h.ukf_id) in request.type]
        return hits
    if request.mode == "vector":
        vectors = indices.vectors
        unknown = sorted(set(request.serializers) - set(vectors.serializers))
        if unknown:
            raise ValueError(
                f"unknown serializer(s) {unknown}; known: {sorted(vectors.serializers)}"
            )
        # ask for more than the limit: some hits may be invisible to the caller
        return vectors.search(
            request.query or "",
            serializers=request.serializers,
            k=request.limit * 2,
            types=request.type,
            mmr=request.mmr,
        )
    return indices.graph.expand(
        request.seeds or [],
        hops=request.hops,
        relations=request.relations,
        types=request.type,
        direction=request.direction,
    )


def _hit_json(hit: Hit, entry: dict[str, Any], include: str) -> dict[str, Any]:
    found: dict[str, Any] = {
        "id": hit.ukf_id,
        "score": hit.score,
        "reason": hit.reason,
        "span": list(hit.span) if hit.span else None,
        "phrase": hit.phrase,
        "detail": hit.detail,
    }
    if include == "entry":
        found["entry"] = entry
    elif include == "brief":
        text = entry.get("short_description") or entry.get("description") or ""
        found.update(
            type=entry["type"],
            name=entry["name"],
            description=text[:BRIEF_CHARS],
            priority=entry["priority"],
            inactive=entry["inactive_mark"],
        )
    return found
