"""FastAPI dependencies shared by every router: the app state, the caller, the permission check.

``Depends(require(Permission.X))`` authenticates the caller (``Authorization: Bearer <key>``
or ``X-API-Key: <key>``; 401 without a valid key), checks the role's permission (403), and
takes a token from the key's rate-limit bucket (429). Routes receive the
:class:`server.auth.Identity`; what knowledge it may see is decided by :mod:`server.access`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import HTTPException, Request
from starlette.concurrency import run_in_threadpool

from server.auth import Identity, Permission
from server.state import AppState

UNAUTHORIZED_HEADERS = {"WWW-Authenticate": 'Bearer realm="almanac"'}


def get_state(request: Request) -> AppState:
    return request.app.state.almanac


def presented_key(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if header:
        scheme, _, token = header.partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            return token.strip()
    return request.headers.get("x-api-key") or None


async def authenticate(request: Request) -> Identity:
    """The caller's identity; 401 without a valid, unrevoked, unexpired key (the detail says
    "API key expired at <time>" to the holder of an expired key's right secret)."""
    key = presented_key(request)
    if key is None:
        raise HTTPException(401, "an API key is required", headers=UNAUTHORIZED_HEADERS)
    state = get_state(request)
    identity = state.auth.cached(key)
    if identity is None:
        identity = await run_in_threadpool(state.auth.identify, key)
    if identity is None:
        detail = await run_in_threadpool(state.auth.refusal, key)
        raise HTTPException(401, detail, headers=UNAUTHORIZED_HEADERS)
    request.state.identity = identity
    return identity


def check_permission(identity: Identity, permission: Permission, needed_to: str = "") -> None:
    """403 naming the permission ``identity`` lacks (and what it is needed for)."""
    if not identity.can(permission):
        role = identity.role.value
        why = f" (needed to {needed_to})" if needed_to else ""
        raise HTTPException(403, f"role {role!r} lacks the {permission.value!r} permission{why}")


def _within_rate(request: Request, identity: Identity) -> None:
    state = get_state(request)
    try:
        state.rate_limiter.check(identity.key_id)
    except HTTPException:
        state.metrics.rate_limited.inc()
        raise


def require(permission: Permission) -> Callable[[Request], Awaitable[Identity]]:
    """A dependency: the caller, who must hold ``permission``, within their rate limit."""

    async def dependency(request: Request) -> Identity:
        identity = await authenticate(request)
        check_permission(identity, permission)
        _within_rate(request, identity)
        return identity

    dependency.__name__ = f"require_{permission.name.lower()}"
    return dependency


async def caller(request: Request) -> Identity:
    """A dependency: the authenticated caller within their rate limit, for routes whose
    permission depends on the request (a job's kind): they call :func:`check_permission`."""
    identity = await authenticate(request)
    _within_rate(request, identity)
    return identity
