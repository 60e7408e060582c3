"""Knowledge over HTTP: list, get, create, patch, delete, search, import and export.

Reads need ``knowledge:read`` and return only what the caller may see; writes need
``knowledge:write``, are checked by :mod:`server.access` and audited (:mod:`server.audit`).
Writes are checked against the entry sent and the entry already stored under its id; a write
to an id the caller cannot see is answered as described in :mod:`server.knowledge` (404 for
PATCH and DELETE, a 403 that does not reveal the id for POST and import).
"""

from __future__ import annotations

import io
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Depends, HTTPException, Query, Request
from fastapi.responses import Response, StreamingResponse
from starlette.concurrency import run_in_threadpool

from kb.filters import UKFFilter
from kb.jsonl import read_numbered_jsonl
from server.auth import Identity, Permission
from server.deps import get_state, require
from server.limits import check_text_length
from server.responses import FastJSONResponse
from server.search import SearchRequest, search

router = APIRouter(prefix="/v1/knowledge", tags=["knowledge"])
Reader = Annotated[Identity, Depends(require(Permission.KNOWLEDGE_READ))]
Writer = Annotated[Identity, Depends(require(Permission.KNOWLEDGE_WRITE))]
Active = Literal["true", "false", "all"]
INLINE_SEARCH_MODES = frozenset({"string", "facet"})


def _filter(
    type: Annotated[list[str] | None, Query(description="UKF types (OR)")] = None,
    collection: str | None = None,
    tag: Annotated[list[str] | None, Query(description="[SLOT:value]; * wildcards")] = None,
    synonym_prefix: str | None = None,
    name: str | None = None,
    source: str | None = None,
    workspace: str | None = None,
    owner: str | None = None,
    active: Active = "true",
) -> UKFFilter:
    return UKFFilter(
        type=type,
        collection=collection,
        tags=tag,
        synonym_prefix=synonym_prefix,
        name=name,
        source=source,
        workspace=workspace,
        owner=owner,
        active=None if active == "all" else active == "true",
    )


Filter = Annotated[UKFFilter, Depends(_filter)]


@router.get("", summary="List visible knowledge, highest priority first")
def list_knowledge(
    request: Request,
    identity: Reader,
    flt: Filter,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    offset: Annotated[int, Query(ge=0, le=1_000_000_000)] = 0,
) -> Response:
    entries = get_state(request).knowledge.list(identity, flt, limit=limit, offset=offset)
    return FastJSONResponse(
        {
            "items": [entry.to_dict() for entry in entries],
            "count": len(entries),
            "limit": limit,
            "offset": offset,
        }
    )


@router.get("/export", summary="Visible knowledge as canonical JSON Lines")
def export_knowledge(
    request: Request,
    identity: Reader,
    type: Annotated[list[str] | None, Query()] = None,
    active: Active = "all",
) -> Response:
    flt = UKFFilter(type=type, active=None if active == "all" else active == "true")
    lines = get_state(request).knowledge.export_lines(identity, flt)
    return StreamingResponse(
        lines,
        media_type="application/x-ndjson",
        headers={"Content-Disposition": 'attachment; filename="knowledge.jsonl"'},
    )


@router.post("/import", summary="Import JSON Lines (all lines validated, one transaction)")
async def import_knowledge(request: Request, identity: Writer) -> Response:
    raw = await request.body()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HTTPException(400, f"the body is not UTF-8: {exc}") from None
    state = get_state(request)

    def work() -> dict[str, Any]:
        entries = read_numbered_jsonl(io.StringIO(text))
        return state.knowledge.import_entries(entries, identity, source="http")

    return FastJSONResponse(await run_in_threadpool(work))


@router.post("/search", summary="Search in string, facet, vector or graph mode")
async def search_knowledge(request: Request, identity: Reader, body: SearchRequest) -> Response:
    """String and facet searches run on the event loop: each is one index lookup and one or
    two indexed store reads, well under a millisecond, and a thread hand-off would cost more
    than that (and tail latency under load). Vector (MiniLM) and graph (up to 4 hops) searches
    can take longer and run on a handler thread."""
    state = get_state(request)
    check_text_length(body.query, state.settings.limits.max_question_chars, "query")

    def work() -> dict[str, Any]:
        with state.metrics.stage(f"search.{body.mode}"):
            return search(state.indices, body, identity)

    try:
        found = work() if body.mode in INLINE_SEARCH_MODES else await run_in_threadpool(work)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    return FastJSONResponse(found)


@router.get("/{ukf_id}", summary="One visible entry")
def get_knowledge(request: Request, identity: Reader, ukf_id: str) -> Response:
    return FastJSONResponse(get_state(request).knowledge.get(ukf_id, identity).to_dict())


@router.get("/{ukf_id}/text", summary="One visible entry rendered as prompts show it")
def knowledge_text(request: Request, identity: Reader, ukf_id: str) -> Response:
    """The entry's text from its default composer (:meth:`ukf.BaseUKF.text`), the rendering
    the question prompts' evidence uses; 422 naming the entry when its template fails."""
    entry = get_state(request).knowledge.get(ukf_id, identity)
    try:
        text = entry.text()
    except Exception as exc:  # a template error on this entry's data: say which
        raise HTTPException(
            422, f"entry {ukf_id} cannot be rendered: {type(exc).__name__}: {exc}"
        ) from None
    return FastJSONResponse({"id": ukf_id, "composer": _composer(entry), "text": text})


@router.post("", status_code=201, summary="Create an entry (UKF JSON)")
def create_knowledge(
    request: Request, identity: Writer, entry: Annotated[dict[str, Any], Body()]
) -> Response:
    created = get_state(request).knowledge.create(entry, identity)
    return FastJSONResponse(created.to_dict(), status_code=201)


@router.patch("/{ukf_id}", summary="Change non-identity fields of an entry")
def patch_knowledge(
    request: Request,
    identity: Writer,
    ukf_id: str,
    changes: Annotated[dict[str, Any], Body()],
) -> Response:
    updated = get_state(request).knowledge.update(ukf_id, changes, identity)
    return FastJSONResponse(updated.to_dict())


@router.delete("/{ukf_id}", summary="Mark an entry inactive (lazy delete)")
def delete_knowledge(request: Request, identity: Writer, ukf_id: str) -> Response:
    version = get_state(request).knowledge.delete(ukf_id, identity)
    return FastJSONResponse({"id": ukf_id, "inactive": True, "store_version": version})


def _composer(entry: Any) -> str:
    """The composer :meth:`ukf.BaseUKF.text` uses by default for ``entry``."""
    return str(entry.content_composers.get("default") or entry.default_composer)
