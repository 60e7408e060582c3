"""The review queue of corrections over HTTP (see :mod:`agents.experience_review`).

An analyst's correction stays theirs until users agree on it or a reviewer shares it:

- ``GET /v1/experiences/review``: corrections waiting in the reviewer's scope (their
  workspace's; every one for a key without a workspace), newest first;
- ``POST /v1/experiences/{id}/approve``: share it (a copy without an owner in its workspace
  layer, global when it has none); audited;
- ``POST /v1/experiences/{id}/reject``: keep it private for good; audited.

Reviewing needs ``knowledge:write``. A correction outside the reviewer's scope is unknown to
them (404), like one that does not exist; one already decided is 409.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from agents.experience_review import REVIEW, ExperienceReview, ReviewError, Sharing
from server.auth import Identity, Permission
from server.deps import get_state, require
from server.responses import FastJSONResponse
from ukf import ExperienceUKF

router = APIRouter(prefix="/v1/experiences", tags=["review"])
Reviewer = Annotated[Identity, Depends(require(Permission.KNOWLEDGE_WRITE))]


class RejectRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(default="", max_length=2_000)


def _review(request: Request) -> ExperienceReview:
    return ExperienceReview(get_state(request).store)


@router.get("/review", summary="Corrections waiting for review")
def pending(
    request: Request, identity: Reviewer, limit: Annotated[int, Query(ge=1, le=500)] = 100
) -> Response:
    waiting = _review(request).pending(workspace=identity.workspace, limit=limit)
    return FastJSONResponse({"count": len(waiting), "items": [_item(e) for e in waiting]})


@router.post("/{experience_id}/approve", summary="Share a correction")
def approve(request: Request, identity: Reviewer, experience_id: str) -> Response:
    try:
        sharing = _review(request).approve(
            experience_id, identity.user, workspace=identity.workspace
        )
    except ReviewError as exc:
        raise HTTPException(exc.status, str(exc)) from None
    _audit(request, "review.approve", identity, experience_id, sharing)
    return FastJSONResponse(
        {"experience_id": experience_id, "scope": sharing.scope, "shared_id": sharing.shared_id}
    )


@router.post("/{experience_id}/reject", summary="Keep a correction private")
def reject(
    request: Request, identity: Reviewer, experience_id: str, body: RejectRequest
) -> Response:
    try:
        _review(request).reject(
            experience_id, identity.user, workspace=identity.workspace, reason=body.reason
        )
    except ReviewError as exc:
        raise HTTPException(exc.status, str(exc)) from None
    _audit(request, "review.reject", identity, experience_id, Sharing("user"))
    return FastJSONResponse({"experience_id": experience_id, "scope": "user"})


def _item(entry: ExperienceUKF) -> dict[str, Any]:
    feedback = entry.content_resources.get("feedback") or {}
    return {
        "id": entry.id,
        "question": entry.question,
        "sql": entry.sql,
        "database": next(iter(entry.tag_values("DATABASE")), None),
        "asked_by": entry.owner,
        "workspace": entry.workspace,
        "verdict": feedback.get("verdict"),
        "comment": feedback.get("comment"),
        "corrected": feedback.get("corrected"),
        "at": feedback.get("at"),
        "review": entry.content_resources.get(REVIEW),
    }


def _audit(
    request: Request, action: str, identity: Identity, experience_id: str, sharing: Sharing
) -> None:
    state = get_state(request)
    ids = [experience_id, *([sharing.shared_id] if sharing.shared_id else [])]
    state.audit.record(
        action,
        identity,
        ids,
        store_version=state.store.version,
        detail={"scope": sharing.scope},
    )
