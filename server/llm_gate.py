"""The LLM gate: a bounded queue in front of the model (see :class:`LLMGate`).

``with gate.slot(): ...`` waits for one of ``concurrency`` slots behind at most ``queue`` other
callers: a full queue raises :class:`GateFullError` (429), a wait past ``wait_s``
:class:`GateTimeoutError` (503). A question is admitted for its whole life (``gate.admit()``:
at most ``concurrency + queue`` questions at once, 429 above) but holds a slot only during
each model call (``gate.turn()``), so a question whose SQL runs long does not keep the model
from others. Background calls (``gate.background_turn()``: the server's warm-up, the LLM calls
of jobs such as ``describe`` and ``mine``) come last: they enter only when no question is in
progress, the time a question waits behind one is not counted against ``wait_s`` (only
against the question's own deadline), a job's call under way is preempted when a question is
admitted, and their own wait ends when their job is cancelled.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

from agents.llm.base import Cancellation, current_cancellation

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
