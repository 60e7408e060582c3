"""Jobs over HTTP: submit (``POST /v1/jobs``), watch (``GET``), cancel (``DELETE``).

Watching needs ``jobs:read``; submitting needs the permission of the job's kind (``jobs:write``
for profile, describe, reindex and import) and ``jobs:read``; a refusal names the permission
that is missing, the kind's first. ``GET /v1/jobs/kinds`` lists the kinds with their
parameters (JSON Schema) and whether the caller may submit them (what the web page offers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from server.access import AccessDeniedError
from server.auth import Identity, Permission
from server.deps import caller, check_permission, get_state, require
from server.jobs import STATES
from server.responses import FastJSONResponse

if TYPE_CHECKING:
    from server.job_kinds import JobKind

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])
Watcher = Annotated[Identity, Depends(require(Permission.JOBS_READ))]
Caller = Annotated[Identity, Depends(caller)]


class JobRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str = Field(description="profile | describe | reindex | import | mine")
    params: dict[str, Any] = Field(default_factory=dict)


@router.post("", status_code=202, summary="Queue a job")
def submit_job(request: Request, identity: Caller, body: JobRequest) -> Response:
    state = get_state(request)
    kind = state.job_kinds.get(body.kind)
    needed = kind.permission if kind else Permission.JOBS_WRITE
    check_permission(identity, needed, f"submit {kind.name!r} jobs" if kind else "submit jobs")
    check_permission(identity, Permission.JOBS_READ, "watch the jobs it submits")
    if kind is None:
        raise HTTPException(
            422, f"unknown job kind {body.kind!r}; available: {sorted(state.job_kinds)}"
        )
    kind.authorize(identity)  # AccessDeniedError: 403 (a workspace key and global writes)
    try:
        params = kind.params.model_validate(body.params)
    except ValidationError as exc:
        raise HTTPException(
            422, [{"loc": ["body", "params", *e["loc"]], "msg": e["msg"]} for e in exc.errors()]
        ) from None
    reason = kind.unavailable(state) or kind.refuse(state, params)
    if reason:
        raise HTTPException(409, f"cannot run {kind.name!r} jobs here: {reason}")
    job = state.jobs.submit(kind.name, params.model_dump(exclude_none=True), identity.to_dict())
    state.wake_workers()
    return FastJSONResponse(job.to_dict(), status_code=202)


@router.get("", summary="Recent jobs, newest first")
def list_jobs(
    request: Request,
    _identity: Watcher,
    state: Annotated[str | None, Query(description=" | ".join(STATES))] = None,
    kind: str | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> Response:
    if state is not None and state not in STATES:
        raise HTTPException(422, f"unknown job state {state!r}; states: {list(STATES)}")
    jobs = get_state(request).jobs.list(state=state, kind=kind, limit=limit)
    return FastJSONResponse({"items": [job.to_dict() for job in jobs], "count": len(jobs)})


@router.get("/kinds", summary="Job kinds: parameters, permission, and whether you may submit")
def list_kinds(request: Request, identity: Watcher) -> Response:
    """Every registered kind with its description, the permission it needs, its parameters
    as JSON Schema, ``allowed`` (this caller may submit it: the permission, ``jobs:read`` and
    the kind's own check, such as no workspace key for global writes) with ``refused`` saying
    why not, and ``unavailable`` (why this server cannot run it, or null)."""
    state = get_state(request)
    items = []
    for kind in state.job_kinds.values():
        refused = _refusal(identity, kind)
        items.append(
            {
                "name": kind.name,
                "description": kind.description,
                "permission": kind.permission.value,
                "allowed": refused is None,
                "refused": refused,
                "unavailable": kind.unavailable(state),
                "params": kind.params.model_json_schema(),
            }
        )
    return FastJSONResponse({"items": items, "count": len(items)})


def _refusal(identity: Identity, kind: JobKind) -> str | None:
    """Why ``identity`` may not submit ``kind`` (None: it may), as ``submit_job`` decides."""
    for permission in (kind.permission, Permission.JOBS_READ):
        if not identity.can(permission):
            return f"needs the {permission.value!r} permission"
    try:
        kind.authorize(identity)
    except AccessDeniedError as exc:
        return str(exc)
    return None


@router.get("/{job_id}", summary="State, progress, result and log of a job")
def get_job(
    request: Request,
    _identity: Watcher,
    job_id: str,
    log_lines: Annotated[int, Query(ge=0, le=10_000)] = 200,
) -> Response:
    return FastJSONResponse(get_state(request).jobs.get(job_id, log_lines=log_lines).to_dict())


@router.delete("/{job_id}", summary="Cancel a queued job, or stop a running one")
def cancel_job(request: Request, identity: Watcher, job_id: str) -> Response:
    state = get_state(request)
    job = state.jobs.get(job_id)
    kind = state.job_kinds.get(job.kind)
    permission = kind.permission if kind else Permission.JOBS_WRITE
    check_permission(identity, permission, f"cancel {job.kind!r} jobs")
    cancelled = state.jobs.cancel(job_id)
    state.cancel_local(job_id)
    return FastJSONResponse(cancelled.to_dict())
