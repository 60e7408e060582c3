"""``GET /v1/health`` (no key needed), ``GET /v1/metrics`` (Prometheus text) and ``GET /v1/me``
(the caller behind the key: what the web page shows and hides by).

Health without a key says only the overall status (what a load balancer needs):
``{"status": "starting" | "warming" | "ready" | "degraded" | "unavailable"}``: starting while
the indices build, warming while the ask tiers' models load or the prompt prefill runs, ready
when a question is answered at once (:mod:`server.readiness`); degraded when the indices or a
model failed, unavailable (503) when the store is unreachable. The details (each warm-up
component's state, store, job counts, indices, worker host:pid, LLM tiers with their endpoints
and models, the target) go only to a key with the ``metrics`` permission, or to anyone when
``ALMANAC_METRICS_PUBLIC`` is set, as for ``/v1/metrics``.
"""

from __future__ import annotations

import logging
import time
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import PlainTextResponse, Response
from starlette.concurrency import run_in_threadpool

from server.auth import Permission
from server.deps import authenticate, caller, get_state, presented_key, require
from server.readiness import INDICES, Readiness, overall_of
from server.responses import FastJSONResponse
from server.state import AppState

log = logging.getLogger(__name__)
router = APIRouter(prefix="/v1", tags=["system"])
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


def almanac_version() -> str:
    try:
        return version("almanac")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "unknown"


def _health(state: AppState) -> tuple[int, dict[str, Any]]:
    body: dict[str, Any] = {"version": almanac_version(), "uptime_s": 0.0}
    body["uptime_s"] = round(time.time() - state.started_at, 3)
    try:
        body["store"] = {
            "ok": True,
            "backend": state.store.backend,
            "schema_version": state.store.schema_version,
            "version": state.store.version,
        }
        body["jobs"] = state.jobs.counts_by_state()
    except Exception as exc:
        log.exception("health: the store is unreachable")
        body["store"] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        body["status"] = "unavailable"
        return 503, body
    body["indices"] = state.indices.status()
    body["workers"] = [
        {"id": worker.worker_id, "job": worker.current_job} for worker in state.workers
    ]
    body["llm_tiers"] = state.llms.describe() if state.llms else []
    body["target"] = state.settings.resolved_target_name if state.target else None
    body["components"] = _components(state.readiness, body["indices"])
    body["status"] = _status(state.readiness, body["indices"])
    return 200, body


def _indices_state(indices: dict[str, Any]) -> str:
    if indices["error"]:
        return "failed"
    return "ready" if indices["ready"] else "warming"


def _status(readiness: Readiness, indices: dict[str, Any]) -> str:
    """degraded when the indices failed to build or to follow the store; starting while they
    build; else as the rest of the warm-up says (warming, ready, degraded: a model failed)."""
    if indices["error"]:
        return "degraded"
    if not indices["ready"]:
        return "starting"
    return overall_of(c for c in readiness.components() if c.name != INDICES)


def _components(readiness: Readiness, indices: dict[str, Any]) -> dict[str, Any]:
    """The warm-up's components; the indices as they are now (a reindex may have mended
    a failed first build)."""
    components = readiness.describe()
    now = _indices_state(indices)
    if components.get(INDICES, {}).get("state", now) != now:
        components[INDICES] = {"state": now}
    return components


async def _may_see_details(request: Request) -> bool:
    """Whether the caller may see the health details: a key with ``metrics`` (or public
    metrics). An invalid key is refused (401) rather than answered as anonymous."""
    if get_state(request).settings.metrics_public:
        return True
    if presented_key(request) is None:
        return False
    identity = await authenticate(request)
    return identity.can(Permission.METRICS)


@router.get("/me", summary="The caller: key id, role, user, workspace, groups and permissions")
async def me(request: Request) -> Response:
    identity = await caller(request)
    permissions = sorted(permission.value for permission in identity.permissions)
    return FastJSONResponse({**identity.to_dict(), "permissions": permissions})


@router.get("/health", summary="Liveness and readiness (details with the metrics permission)")
async def health(request: Request) -> Response:
    detailed = await _may_see_details(request)
    status, body = await run_in_threadpool(_health, get_state(request))
    return FastJSONResponse(body if detailed else {"status": body["status"]}, status_code=status)


async def _metrics_permission(request: Request) -> None:
    if not get_state(request).settings.metrics_public:
        await require(Permission.METRICS)(request)


@router.get(
    "/metrics",
    summary="Prometheus metrics",
    response_class=PlainTextResponse,
    dependencies=[Depends(_metrics_permission)],
)
async def metrics(request: Request) -> Response:
    text = await run_in_threadpool(get_state(request).metrics.render)
    return PlainTextResponse(text, media_type=PROMETHEUS_TEXT)
