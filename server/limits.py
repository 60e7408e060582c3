"""Request limits: body size, question length, rate per key, time per request, the LLM gate.

- :class:`BodyLimitMiddleware`: 413 for a body over the limit (by ``Content-Length`` before
  reading anything, or while a chunked body streams in); some paths get their own limit.
- :func:`check_text_length`: 422 naming the field when a question or query is too long.
- :class:`RateLimiter`: a token bucket per API key (429 with ``Retry-After``).
- :class:`TimeoutMiddleware`: 504 when a response has not started within the limit (the
  handler's thread is left to finish; its late answer is dropped).
- :class:`LLMGate` (in :mod:`server.llm_gate`, re-exported here): a bounded queue in front of
  the LLM, with questions first and background calls (warm-up, jobs) last.

The SQL a user sends (feedback corrections) has its own bound: :mod:`server.sql_pool`.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server.llm_gate import (
    PREEMPTED,
    Admission,
    GateFullError,
    GateTimeoutError,
    LLMGate,
)

log = logging.getLogger(__name__)


# ----------------------------------------------------------------------------- body size
class BodyTooLargeError(HTTPException):
    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body is larger than {limit} bytes")


class BodyLimitMiddleware:
    """Refuse bodies over ``max_bytes`` (or ``per_path[path]``) with 413."""

    def __init__(
        self, app: ASGIApp, *, max_bytes: int, per_path: Mapping[str, int] | None = None
    ) -> None:
        self.app, self.max_bytes, self.per_path = app, max_bytes, dict(per_path or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.per_path.get(scope["path"], self.max_bytes)
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await _send_json(send, 413, {"detail": f"request body is larger than {limit} bytes"})
            return
        seen = 0

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLargeError(limit)
            return message

        await self.app(scope, limited_receive, send)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _send_json(
    send: Send, status: int, body: dict[str, Any], headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    import json

    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


# --------------------------------------------------------------------------- text length
def check_text_length(value: str | None, limit: int, field: str = "question") -> None:
    """422 when ``value`` is longer than ``limit`` characters."""
    if value is not None and len(value) > limit:
        raise HTTPException(422, f"{field} is {len(value)} characters long; the limit is {limit}")


# ---------------------------------------------------------------------------- rate limit
class RateLimiter:
    """Token buckets per key: ``rate_per_s`` refill, at most ``burst`` tokens."""

    def __init__(self, rate_per_s: float, burst: int) -> None:
        self.rate, self.burst = rate_per_s, float(burst)
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def acquire(self, key: str) -> float:
        """Take a token for ``key``: 0.0 when granted, else the seconds until one is free."""
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(key, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, now)
                return 0.0
            self._buckets[key] = (tokens, now)
            return (1.0 - tokens) / self.rate

    def check(self, key: str) -> None:
        """Raise 429 with ``Retry-After`` when ``key`` is over its rate."""
        wait = self.acquire(key)
        if wait > 0:
            raise HTTPException(
                429,
                f"rate limit of {self.rate:g} requests/s exceeded for this key",
                headers={"Retry-After": str(max(1, math.ceil(wait)))},
            )


# -------------------------------------------------------------------------------- timeout
class TimeoutMiddleware:
    """504 when the response has not started within ``timeout_s``."""

    def __init__(self, app: ASGIApp, *, timeout_s: float) -> None:
        self.app, self.timeout_s = app, timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = asyncio.Event()
        abandoned = False

        async def guarded_send(message: Message) -> None:
            if abandoned:
                return
            if message["type"] == "http.response.start":
                started.set()
            await send(message)

        task = asyncio.ensure_future(self.app(scope, receive, guarded_send))
        waiter = asyncio.ensure_future(started.wait())
        try:
            await asyncio.wait(
                {task, waiter}, timeout=self.timeout_s, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            waiter.cancel()
        if task.done() or started.is_set():
            await task  # finishes the body (or re-raises the handler's error)
            return
        abandoned = True
        task.cancel()
        task.add_done_callback(_log_abandoned(scope))
        await _send_json(
            send, 504, {"detail": f"no response within {self.timeout_s:g} s (request timeout)"}
        )


def _log_abandoned(scope: Scope) -> Any:
    def done(task: asyncio.Task) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.warning("timed-out request %s failed later: %s", scope["path"], task.exception())

    return done


__all__ = [
    "PREEMPTED",
    "Admission",
    "BodyLimitMiddleware",
    "BodyTooLargeError",
    "GateFullError",
    "GateTimeoutError",
    "LLMGate",
    "RateLimiter",
    "TimeoutMiddleware",
    "check_text_length",
]
