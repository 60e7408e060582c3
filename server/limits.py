"""Request limits: body size, question length, rate per key, time per request, the LLM gate.

- :class:`BodyLimitMiddleware`: 413 for a body over the limit (by ``Content-Length`` before
  reading anything, or while a chunked body streams in); some paths get their own limit.
- :func:`check_text_length`: 422 naming the field when a question or query is too long.
- :class:`RateLimiter`: a token bucket per API key (429 with ``Retry-After``).
- :class:`TimeoutMiddleware`: 504 when a response has not started within the limit (the
  handler's thread is left to finish; its late answer is dropped).
- :class:`LLMGate`: a bounded queue in front of the LLM. ``with gate.slot(): ...`` waits for
  one of ``concurrency`` slots behind at most ``queue`` other callers: a full queue raises
  :class:`GateFullError` (429), a wait past ``wait_s`` :class:`GateTimeoutError` (503).
  A question is admitted for its whole life (``gate.admit()``: at most ``concurrency + queue``
  questions at once, 429 above) but holds a slot only during each model call
  (``gate.turn()``), so a question whose SQL runs long does not keep the model from others.
  Background calls (``gate.background_turn()``: the server's warm-up, the LLM calls of jobs
  such as ``describe``) come last: they enter only when no question is in progress, the time
  a question waits behind one is not counted against ``wait_s`` (only against the question's
  own deadline), and their own wait ends when their job is cancelled.

The SQL a user sends (feedback corrections) has its own bound: :mod:`server.sql_pool`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from fastapi import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agents.llm.base import Cancellation, current_cancellation

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


# ------------------------------------------------------------------------------- LLM gate
PREEMPTED = "preempted by a question"
"""The reason a preemptible background call is cancelled with when a question arrives."""


class GateFullError(RuntimeError):
    """Every slot is taken and the queue is full (429)."""


class GateTimeoutError(RuntimeError):
    """No slot came free within the wait (503)."""


class LLMGate:
    """A bounded queue in front of the LLM.

    Two ways in:

    - ``with gate.slot(): ...``: hold one of ``concurrency`` slots for the whole block, behind
      at most ``queue`` waiting callers (:class:`GateFullError` above, :class:`GateTimeoutError`
      after ``wait_s``).
    - a question: ``gate.admit()`` counts it in (at most ``concurrency + queue`` questions at
      once: the running and the waiting of a saturated gate, :class:`GateFullError` above),
      ``Admission.wait_for_model()`` waits until a slot is free (503 after ``wait_s``, still
      before anything is answered), and each model call then holds a slot only while it runs
      (``with gate.turn(): ...``, waiting without the queue bound: its question was counted
      at admission). The SQL a question runs between its model calls holds no slot, so one
      slow query no longer keeps every other user's question waiting.
    - a background call (``with gate.background_turn(): ...``; the warm-up's are
      ``gate.warm_up_turn()``): the lowest priority. It waits, without limit, until a slot is
      free and no question is in progress or waiting, so a question is served before the next
      background call; the wait ends with :class:`~agents.llm.base.LLMCancelledError` once the
      call's :class:`~agents.llm.base.Cancellation` is cancelled (a job's, current in its
      worker's thread). A question that waits for a background call under way waits until
      the call ends or the question's ``until`` passes, and that time is not counted against
      ``wait_s``.

    Args:
        concurrency: model calls at once.
        queue: callers allowed to wait; one more is refused at once with
            :class:`GateFullError`.
        wait_s: how long a caller waits before :class:`GateTimeoutError`.
    """

    def __init__(self, concurrency: int, queue: int, wait_s: float) -> None:
        if concurrency < 1 or queue < 0 or wait_s <= 0:
            raise ValueError("LLMGate needs concurrency >= 1, queue >= 0 and wait_s > 0")
        self.concurrency, self.queue, self.wait_s = concurrency, queue, wait_s
        self.in_flight = self.waiting = self.questions = 0
        self.background = 0  # slots held by background calls (warm-up and jobs)
        self.background_waiting = 0  # background calls waiting for their turn
        self.warming = 0  # of the background calls, the warm-up's
        self.rejected_full = self.rejected_timeout = 0
        self.preempted = 0  # background calls stopped for a question so far
        self._preemptible: set[Cancellation] = set()  # tokens of job calls under way
        self._cond = threading.Condition()

    def admit(self) -> Admission:
        """Count one more question in progress; :class:`GateFullError` (429) when
        ``concurrency + queue`` are (what a saturated gate holds: running and waiting)."""
        with self._cond:
            if self.questions >= self.concurrency + self.queue:
                self.rejected_full += 1
                raise GateFullError(
                    f"the LLM queue is full ({self.questions} questions in progress, "
                    f"{self.in_flight} at the model)"
                )
            self.questions += 1
            if self.in_flight >= self.concurrency:
                self._preempt()
        return Admission(self)

    def _preempt(self) -> None:
        """Stop the preemptible background calls under way (holding the lock): a question
        then waits for a fraction of a second, not for a job's whole model call."""
        for token in self._preemptible:
            token.cancel(PREEMPTED)
            self.preempted += 1
        self._preemptible.clear()

    @contextlib.contextmanager
    def turn(self, until: float | None = None) -> Iterator[None]:
        """Hold one slot for one model call of an admitted question (no queue bound: the
        question was counted at admission); :class:`GateTimeoutError` after ``wait_s`` (time
        behind a background call not counted) or at ``until`` (``time.monotonic()``)."""
        self._enter(bounded=False, until=until)
        try:
            yield
        finally:
            self._leave()

    def wait_free(self, until: float | None = None) -> None:
        """Wait until a slot is free, taking none; :class:`GateTimeoutError` as for
        :meth:`turn`."""
        self._enter(bounded=False, take=False, until=until)

    @contextlib.contextmanager
    def background_turn(
        self,
        cancellation: Cancellation | None = None,
        *,
        warm_up: bool = False,
        preemptible: bool = False,
    ) -> Iterator[Cancellation | None]:
        """Hold one slot for one background call, entering only when a slot is free and no
        question is in progress or waiting (no time limit: background work can wait).

        The wait looks at ``cancellation`` (default: the current token,
        :func:`agents.llm.base.current_cancellation`) every
        :attr:`~agents.llm.base.Cancellation.CHECK_EVERY_S` and ends with
        :class:`~agents.llm.base.LLMCancelledError` once it is cancelled. ``warm_up``: the
        call is the server's warm-up (counted in :attr:`warming` too). ``preemptible``: the
        block gets a token (a child of ``cancellation``) to run the call under, which a
        question admitted meanwhile cancels with the reason :data:`PREEMPTED`; the caller
        takes another turn later (:class:`server.llm_factory.BackgroundLLM`). The warm-up is
        not preemptible: the prefix it prefills is the one the question needs."""
        token = cancellation if cancellation is not None else current_cancellation()
        with self._cond:
            self.background_waiting += 1
            try:
                while True:
                    if token is not None:
                        token.raise_if_cancelled("waiting for the model behind questions")
                    if self.in_flight < self.concurrency and not (self.questions or self.waiting):
                        break
                    self._cond.wait(None if token is None else Cancellation.CHECK_EVERY_S)
            finally:
                self.background_waiting -= 1
            self.in_flight += 1
            self.background += 1
            self.warming += warm_up
            call = Cancellation(parent=token) if preemptible else None
            if call is not None:
                self._preemptible.add(call)
        try:
            yield call
        finally:
            with self._cond:
                self.background -= 1
                self.warming -= warm_up
                if call is not None:
                    self._preemptible.discard(call)
            self._leave()

    def warm_up_turn(self) -> contextlib.AbstractContextManager[Cancellation | None]:
        """The warm-up's background turn (see :meth:`background_turn`)."""
        return self.background_turn(warm_up=True)

    def _dismiss(self) -> None:
        with self._cond:
            self.questions -= 1
            self._cond.notify_all()  # a background call may wait for no question to be left

    @contextlib.contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one slot for the body of the ``with`` block."""
        self._enter()
        try:
            yield
        finally:
            self._leave()

    def _leave(self) -> None:
        with self._cond:
            self.in_flight -= 1
            self._cond.notify_all()  # waiters for a turn and for a free slot alike

    def _enter(
        self, *, bounded: bool = True, take: bool = True, until: float | None = None
    ) -> None:
        with self._cond:
            if self.in_flight < self.concurrency:
                self.in_flight += take
                return
            if bounded and self.waiting >= self.queue:
                self.rejected_full += 1
                raise GateFullError(
                    f"the LLM queue is full ({self.in_flight} running, {self.waiting} waiting)"
                )
            self.waiting += 1
            try:
                self._wait_for_slot(until)
                self.in_flight += take
            finally:
                self.waiting -= 1

    def _wait_for_slot(self, until: float | None) -> None:
        """Wait (holding the lock) until a slot is free. Only the time behind questions counts
        against ``wait_s``: while a background call holds a slot, the wait is bounded by
        ``until`` alone. No background call enters while someone waits, so each wait's cause
        holds until the next notification."""
        charged = 0.0
        while self.in_flight >= self.concurrency:
            behind_background = self.background > 0
            limits = [] if behind_background else [self.wait_s - charged]
            if until is not None:
                limits.append(until - time.monotonic())
            timeout = min(limits) if limits else None
            if timeout is not None and timeout <= 0:
                self.rejected_timeout += 1
                if charged >= self.wait_s:
                    raise GateTimeoutError(f"no LLM slot came free within {self.wait_s:g} s")
                raise GateTimeoutError("no LLM slot came free before the question's deadline")
            began = time.monotonic()
            self._cond.wait(timeout)
            if not behind_background:
                charged += time.monotonic() - began


class Admission:
    """A question counted in by :meth:`LLMGate.admit`, until :meth:`release` (or the end of
    its ``with`` block); releasing twice is harmless."""

    def __init__(self, gate: LLMGate) -> None:
        self._gate = gate
        self._held = True
        self._lock = threading.Lock()

    def wait_for_model(self, until: float | None = None) -> None:
        """Wait until the model has a free slot (:class:`GateTimeoutError` after ``wait_s``
        behind other questions, or at ``until`` behind background calls), so a question that would
        only wait is refused before it starts answering."""
        self._gate.wait_free(until)

    def release(self) -> None:
        with self._lock:
            held, self._held = self._held, False
        if held:
            self._gate._dismiss()

    def __enter__(self) -> Admission:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.release()
