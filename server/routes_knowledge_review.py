"""The review queue of learned knowledge over HTTP (see :mod:`agents.learn.review_queue`).

Mined candidates, entries a rollback took back, entries the regression gate rejected, and
entries deactivated for their blame wait here until a reviewer decides:

- ``GET /v1/knowledge/review``: the waiting entries in the reviewer's scope, newest first
  (filters: ``type``, ``job_id``, ``reason``, ``database``; ``limit``/``offset`` pages);
- ``GET /v1/knowledge/review/{id}``: one, with the experiences it was learned from;
- ``POST /v1/knowledge/review/{id}/approve``: activate it (``ask`` uses it from now on);
- ``POST /v1/knowledge/review/{id}/reject``: keep it inactive for good (re-mining does not
  add it again);
- ``PATCH /v1/knowledge/review/{id}``: change its content, content resources, synonyms,
  description or priority before approving it;
- ``POST /v1/knowledge/review/rollback``: deactivate everything one mining job activated.

Every route needs ``knowledge:write`` (ops and admin keys; analysts and ml keys get 403). A key
working in a workspace sees and decides only that workspace's entries; a key without one,
every entry. An entry out of scope is unknown (404), like one that does not exist; an entry
that does not wait for review is 409; a body that is not valid is 422. Every decision is
audited and the indices are refreshed before the answer, so the next question sees it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from agents.learn.mine.candidates import mining_note
from agents.learn.review_queue import QueueFilter, ReviewQueue, ReviewQueueError, review_note
from server.auth import Identity, Permission
from server.deps import get_state, require
from server.responses import FastJSONResponse
from ukf import BaseUKF

log = logging.getLogger(__name__)
router = APIRouter(prefix="/v1/knowledge/review", tags=["knowledge review"])
Reviewer = Annotated[Identity, Depends(require(Permission.KNOWLEDGE_WRITE))]
Reason = Annotated[str | None, Query(pattern="^(candidate|rolled_back|gate_rejected|blamed)$")]


class RejectRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(default="", max_length=2_000)


class EditRequest(BaseModel):
    """The fields a reviewer may change (others are identity fields or the queue's state)."""

    model_config = ConfigDict(extra="forbid")

    content: str | None = Field(default=None, max_length=20_000)
    content_resources: dict[str, Any] | None = None
    synonyms: list[Annotated[str, Field(min_length=1, max_length=200)]] | None = Field(
        default=None, max_length=200
    )
    description: str | None = Field(default=None, max_length=20_000)
    priority: int | None = Field(default=None, ge=-1_000_000, le=1_000_000)


class RollbackRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    job_id: str = Field(min_length=1, max_length=200)


def _queue(request: Request) -> ReviewQueue:
    return ReviewQueue(get_state(request).store)


@router.get("", summary="Learned knowledge waiting for review")
def list_waiting(
    request: Request,
    identity: Reviewer,
    type: Annotated[list[str] | None, Query(description="UKF types (OR)")] = None,
    job_id: str | None = None,
    reason: Reason = None,
    database: str | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> Response:
    flt = QueueFilter(types=type, job_id=job_id, reason=reason, database=database)
    items, total = _queue(request).waiting(
        workspace=identity.workspace, flt=flt, limit=limit, offset=offset
    )
    return FastJSONResponse(
        {
            "total": total,
            "count": len(items),
            "limit": limit,
            "offset": offset,
            "items": [item.to_dict() for item in items],
        }
    )


@router.post("/rollback", summary="Deactivate everything a mining job activated")
def rollback(request: Request, identity: Reviewer, body: RollbackRequest) -> Response:
    with _refusals():
        ids = _queue(request).rollback(body.job_id, identity.user, workspace=identity.workspace)
    version = _record(request, "review.rollback", identity, ids, {"job_id": body.job_id})
    return FastJSONResponse(
        {"job_id": body.job_id, "rolled_back": ids, "count": len(ids), "store_version": version}
    )


@router.get("/{ukf_id}", summary="A waiting entry with the experiences it was learned from")
def detail(request: Request, identity: Reviewer, ukf_id: str) -> Response:
    with _refusals():
        item = _queue(request).get(ukf_id, workspace=identity.workspace)
    return FastJSONResponse(item.to_dict(detail=True))


@router.post("/{ukf_id}/approve", summary="Activate a waiting entry")
def approve(request: Request, identity: Reviewer, ukf_id: str) -> Response:
    with _refusals():
        entry = _queue(request).approve(ukf_id, identity.user, workspace=identity.workspace)
    version = _record(request, "review.knowledge.approve", identity, [ukf_id], _state(entry))
    return FastJSONResponse(_decided(entry, "approved", version))


@router.post("/{ukf_id}/reject", summary="Keep a waiting entry inactive for good")
def reject(
    request: Request, identity: Reviewer, ukf_id: str, body: RejectRequest | None = None
) -> Response:
    why = body.reason if body else ""
    with _refusals():
        entry = _queue(request).reject(
            ukf_id, identity.user, workspace=identity.workspace, reason=why
        )
    detail = {**_state(entry), **({"reason": why} if why else {})}
    version = _record(request, "review.knowledge.reject", identity, [ukf_id], detail)
    return FastJSONResponse(_decided(entry, "rejected", version))


@router.patch("/{ukf_id}", summary="Edit a waiting entry before approving it")
def edit(request: Request, identity: Reviewer, ukf_id: str, body: EditRequest) -> Response:
    changes = body.model_dump(exclude_none=True)
    with _refusals():
        entry = _queue(request).edit(ukf_id, changes, identity.user, workspace=identity.workspace)
    version = _record(
        request, "review.knowledge.edit", identity, [ukf_id], {"fields": sorted(changes)}
    )
    return FastJSONResponse({**entry.to_dict(), "store_version": version})


@contextmanager
def _refusals() -> Iterator[None]:
    """A queue error becomes its HTTP status (404, 409, 422) with its message."""
    try:
        yield
    except ReviewQueueError as exc:
        raise HTTPException(exc.status, str(exc)) from None


def _state(entry: BaseUKF) -> dict[str, Any]:
    return {
        "type": entry.type,
        "active": not entry.inactive_mark,
        "job_id": mining_note(entry).get("job_id"),
    }


def _decided(entry: BaseUKF, decision: str, version: int) -> dict[str, Any]:
    return {
        "id": entry.id,
        "decision": decision,
        "active": not entry.inactive_mark,
        "status": mining_note(entry).get("status"),
        "review": review_note(entry) or None,
        "store_version": version,
    }


def _record(
    request: Request, action: str, identity: Identity, ids: list[str], detail: dict[str, Any]
) -> int:
    """Audit a decision and refresh the indices; return the store version."""
    state = get_state(request)
    version = state.store.version
    state.audit.record(action, identity, ids, store_version=version, detail=detail)
    try:
        state.indices.refresh(wait=True)
    except Exception:  # the refresher thread catches up; the decision itself is stored
        log.exception("index refresh after %s failed", action)
    return version
