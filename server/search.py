"""The four knowledge-search modes of the HTTP API, over the server's indices.

The indices are an :class:`indices.index_set.IndexSet` (built in the background when the
server starts, so a search before that answers 503; following the store; swapped by the
``reindex`` job). :func:`search` answers ``POST /v1/knowledge/search``: ``string``
(Aho-Corasick spans), ``facet`` (tags and filters, in SQL), ``vector`` (embeddings) and
``graph`` (expansion from seed entries). Every hit is checked against the caller's
visibility before it is returned.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from indices.hits import Hit
from indices.index_set import IndexSet, node_type
from server.access import visible_documents
from server.auth import Identity

BRIEF_CHARS = 200


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


def search(indices: IndexSet, request: SearchRequest, identity: Identity) -> dict[str, Any]:
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


def _raw_hits(indices: IndexSet, request: SearchRequest, identity: Identity) -> list[Hit]:
    if request.mode == "facet":
        criteria = {"type": request.type} if request.type else {}
        return indices.facets.search(
            request.tags, reader=identity.reader, limit=request.limit, **criteria
        )
    if request.mode == "string":
        hits = indices.strings.search_hits(request.query or "", mode=request.conflicts)
        if request.type:
            graph = indices.graph
            hits = [h for h in hits if node_type(graph, h.ukf_id) in request.type]
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
