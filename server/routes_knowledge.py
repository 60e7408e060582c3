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

from kb.errors import JSONLImportError
from kb.filters import UKFFilter
from kb.jsonl import parse_line
from server.auth import Identity, Permission
from server.deps import get_state, require
from server.limits import check_text_length
from server.responses import FastJSONResponse
from server.search import SearchRequest, search
from ukf import BaseUKF

router = APIRouter(prefix="/v1/knowledge", tags=["knowledge"])
Reader = Annotated[Identity, Depends(require(Permission.KNOWLEDGE_READ))]
Writer = Annotated[Identity, Depends(require(Permission.KNOWLEDGE_WRITE))]
Active = Literal["true", "false", "all"]
INLINE_SEARCH_MODES = frozenset({"string", "facet"})
LINE_ERRORS_SHOWN = 100
"""How many bad lines a refused import lists (``errors``); the count says how many in all."""


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
    total: Annotated[bool, Query(description="also count every match (one more query)")] = False,
) -> Response:
    knowledge = get_state(request).knowledge
    entries = knowledge.list(identity, flt, limit=limit, offset=offset)
    page: dict[str, Any] = {
        "items": [entry.to_dict() for entry in entries],
        "count": len(entries),
        "limit": limit,
        "offset": offset,
    }
    if total:
        page["total"] = knowledge.count(identity, flt)
    return FastJSONResponse(page)


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
    """Every line is validated before anything is written; a file with bad lines is refused
    whole (422) with ``errors``: ``[{"line", "error"}]`` for each bad line (the first
    :data:`LINE_ERRORS_SHOWN`), ``error_count``, and ``detail`` naming the first ones."""
    raw = await request.body()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HTTPException(400, f"the body is not UTF-8: {exc}") from None
    state = get_state(request)

    def work() -> Response:
        entries, errors = _parse_lines(text)
        if errors:
            return _refused_lines(errors)
        return FastJSONResponse(state.knowledge.import_entries(entries, identity, source="http"))

    return await run_in_threadpool(work)


def _parse_lines(text: str) -> tuple[list[tuple[int, BaseUKF]], list[dict[str, Any]]]:
    """Every non-blank line parsed and validated (as :func:`kb.jsonl.read_numbered_jsonl`
    does), with an error per bad line rather than the first one only."""
    entries: list[tuple[int, BaseUKF]] = []
    errors: list[dict[str, Any]] = []
    for number, line in enumerate(io.StringIO(text), start=1):
        if not line.strip():
            continue
        try:
            entries.append((number, parse_line(line, "body", number)))
        except JSONLImportError as exc:
            message = str(exc).removeprefix(f"{exc.source}, line {exc.line}: ")
            errors.append({"line": exc.line, "error": message})
    return entries, errors


def _refused_lines(errors: list[dict[str, Any]]) -> Response:
    """422 naming every bad line: ``detail`` (the first few, as text) and ``errors``."""
    first = "; ".join(f"line {e['line']}: {e['error']}" for e in errors[:3])
    more = f" (+{len(errors) - 3} more)" if len(errors) > 3 else ""
    count = f"{len(errors)} line{'s' if len(errors) > 1 else ''}"
    return FastJSONResponse(
        {
            "detail": f"{count} not valid, nothing was imported: {first}{more}",
            "errors": errors[:LINE_ERRORS_SHOWN],
            "error_count": len(errors),
        },
        status_code=422,
    )


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
