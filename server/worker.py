"""The job worker: a thread that claims queued jobs and runs them.

A runner is a function of a :class:`JobContext` returning a JSON-ready result. Through the
context it reports progress and log lines, and at each report (or :meth:`JobContext.check`)
it learns whether to stop: the job was cancelled (→ ``cancelled``), the worker is shutting
down (→ the job goes back to the queue), or the job was taken from this worker after a missed
heartbeat (→ nothing more is written). An exception fails the job with its message.

The job's :attr:`JobContext.cancellation` is current (``agents.llm.base.cancellation_scope``)
while its runner runs, and is cancelled together with the job (or when the job is lost or the
worker stops): an LLM call the runner makes stops within about a second, even mid-prefill or
while waiting for a model another caller holds, and the job ends ``cancelled`` as at a check.

A second thread sends heartbeats for the running job every third of the lease and picks up
cancellations requested through other processes. Library log records emitted by the job's
thread (``kb``, ``indices``, ``agents``, ...) are copied into the job's log.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from agents.llm.base import Cancellation, LLMCancelledError, cancellation_scope
from kb.profile.model import StopProfiling
from server.jobs import CANCELLED, FAILED, SUCCEEDED, Job, JobQueue
from server.metrics import Metrics

log = logging.getLogger(__name__)


class JobCancelledError(StopProfiling):
    """The job was cancelled; the runner stops (profiling too: see ``StopProfiling``)."""


class JobInterruptedError(StopProfiling):
    """The worker is stopping, or the job is no longer this worker's."""


class JobContext:
    """What a runner sees of its job.

    Attributes:
        cancellation: cancelled when the job must stop (cancelled, lost, or the worker
            stopping); current for the LLM calls of the runner's thread.
    """

    def __init__(
        self,
        queue: JobQueue,
        job: Job,
        worker_id: str,
        stopping: threading.Event,
        *,
        report_every_s: float = 0.25,
    ) -> None:
        self.queue, self.job, self.worker_id = queue, job, worker_id
        self._stopping = stopping
        self._cancel = threading.Event()
        self._lost = threading.Event()
        self.cancellation = Cancellation()
        self._report_every_s = report_every_s
        self._last_report = 0.0

    @property
    def job_id(self) -> str:
        return self.job.id

    @property
    def params(self) -> dict[str, Any]:
        return self.job.params

    @property
    def submitter(self) -> dict[str, Any]:
        return self.job.submitter

    def request_cancel(self) -> None:
        self._cancel.set()
        self.cancellation.cancel(f"job {self.job_id} was cancelled")

    def mark_lost(self) -> None:
        self._lost.set()
        self.cancellation.cancel(f"job {self.job_id} is no longer this worker's")

    def interrupt(self) -> None:
        """The worker is stopping: end the runner's LLM call under way (the next check raises)."""
        self.cancellation.cancel("the worker is shutting down")

    def run(self, runner: JobRunner) -> dict[str, Any] | None:
        """``runner(self)`` with :attr:`cancellation` current; a stopped LLM call or
        profiling run becomes the :meth:`check` error that says why."""
        with cancellation_scope(self.cancellation):
            try:
                return runner(self)
            except (JobCancelledError, JobInterruptedError):
                raise
            except (LLMCancelledError, StopProfiling):
                self.check()  # raises when the stop came from this job's cancellation
                raise

    @property
    def lost(self) -> bool:
        return self._lost.is_set()

    def check(self) -> None:
        """Raise when the job must stop (cancelled, lost, or the worker is stopping)."""
        if self._lost.is_set():
            raise JobInterruptedError("the job was taken over after a missed heartbeat")
        if self._cancel.is_set():
            raise JobCancelledError("cancelled")
        if self._stopping.is_set():
            raise JobInterruptedError("the worker is shutting down")

    def progress(self, fraction: float | None, message: str | None = None) -> None:
        """Report progress (0..1) and a status line; written at most every 0.25 s."""
        self.check()
        now = time.monotonic()
        final = fraction is not None and fraction >= 1.0
        if not final and now - self._last_report < self._report_every_s:
            return
        self._last_report = now
        if not self.queue.report(self.job_id, self.worker_id, fraction, message):
            self.mark_lost()
            self.check()

    def log(self, line: str, level: str = "info") -> None:
        self.queue.log(self.job_id, line, level)


JobRunner = Callable[[JobContext], dict[str, Any] | None]


class _JobLogHandler(logging.Handler):
    """Copies log records of one thread into the job log."""

    def __init__(self, context: JobContext, thread_id: int) -> None:
        super().__init__(logging.INFO)
        self.context, self.thread_id = context, thread_id

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread != self.thread_id or record.name.startswith("server.worker"):
            return
        try:
            self.context.log(f"{record.name}: {record.getMessage()}", record.levelname.lower())
        except Exception:  # the job log is best effort; never break the job for it
            self.handleError(record)


class JobWorker:
    """Runs queued jobs of the kinds in ``runners`` in a background thread.

    Args:
        queue: the job queue.
        runners: a runner per job kind.
        poll_s: how often an idle worker looks for jobs (``wake()`` looks at once).
        lease_s: heartbeat lease; running jobs of dead workers are recovered after it.
        metrics: where job outcomes and durations are counted.
    """

    def __init__(
        self,
        queue: JobQueue,
        runners: Mapping[str, JobRunner],
        *,
        poll_s: float = 1.0,
        lease_s: float = 30.0,
        metrics: Metrics | None = None,
    ) -> None:
        self.queue, self.runners = queue, dict(runners)
        self.poll_s, self.lease_s, self.metrics = poll_s, lease_s, metrics
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._stopping = threading.Event()
        self._wake = threading.Event()
        self._current: JobContext | None = None
        self._threads: list[threading.Thread] = []
        self._last_recovery = 0.0

    # ------------------------------------------------------------------ control
    def start(self) -> None:
        if self._threads:
            return
        for target, name in ((self._loop, "jobs"), (self._heartbeats, "heartbeat")):
            thread = threading.Thread(target=target, name=f"almanac-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)
        log.info("job worker %s started (kinds: %s)", self.worker_id, sorted(self.runners))

    def stop(self, timeout: float = 10.0) -> None:
        """Stop claiming; a running job is interrupted at its next check and requeued."""
        self._stopping.set()
        self._wake.set()
        current = self._current
        if current is not None:
            current.interrupt()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        alive = [t.name for t in self._threads if t.is_alive()]
        if alive:
            log.warning("worker %s: %s still running after %g s", self.worker_id, alive, timeout)
        self._threads = []

    def wake(self) -> None:
        """Look for work now (after a submit)."""
        self._wake.set()

    def cancel_local(self, job_id: str) -> None:
        """Tell the runner at once when ``job_id`` runs here (the database flag is also set)."""
        current = self._current
        if current is not None and current.job_id == job_id:
            current.request_cancel()

    @property
    def current_job(self) -> str | None:
        current = self._current
        return current.job_id if current else None

    # --------------------------------------------------------------------- loops
    def _loop(self) -> None:
        while not self._stopping.is_set():
            job = None
            try:
                self._recover_if_due()
                job = self.queue.claim(self.worker_id, sorted(self.runners))
            except Exception:
                log.exception("job worker %s: cannot reach the job queue", self.worker_id)
            if job is not None:
                self._run(job)
                continue
            self._wake.wait(self.poll_s)
            self._wake.clear()

    def _recover_if_due(self) -> None:
        now = time.monotonic()
        if now - self._last_recovery < min(self.lease_s / 2, 30.0):
            return
        self._last_recovery = now
        for job_id, state in self.queue.recover(self.lease_s):
            log.warning("recovered job %s (%s)", job_id, state)

    def _heartbeats(self) -> None:
        interval = max(0.05, self.lease_s / 3)
        while not self._stopping.wait(interval):
            current = self._current
            if current is None:
                continue
            try:
                cancel = self.queue.heartbeat(current.job_id, self.worker_id)
            except Exception:
                log.exception("heartbeat for job %s failed", current.job_id)
                continue
            if cancel is None:
                current.mark_lost()
            elif cancel:
                current.request_cancel()

    # ---------------------------------------------------------------------- runs
    def _run(self, job: Job) -> None:
        context = JobContext(self.queue, job, self.worker_id, self._stopping)
        if job.cancel_requested:
            context.request_cancel()
        self._current = context
        handler = _JobLogHandler(context, threading.get_ident())
        logging.getLogger().addHandler(handler)
        started = time.perf_counter()
        try:
            state = self._execute(context)
        finally:
            logging.getLogger().removeHandler(handler)
            self._current = None
        if self.metrics is not None and state is not None:
            self.metrics.jobs_finished.inc(job.kind, state)
            self.metrics.observe_stage(f"job.{job.kind}", time.perf_counter() - started)

    def _execute(self, context: JobContext) -> str | None:
        job, queue, wid = context.job, self.queue, self.worker_id
        try:
            context.check()
            result = context.run(self.runners[job.kind]) or {}
        except JobCancelledError:
            queue.finish(job.id, wid, CANCELLED, message="cancelled while running")
            return CANCELLED
        except JobInterruptedError as exc:
            if context.lost:
                log.warning("job %s was taken from worker %s: %s", job.id, wid, exc)
                return None
            queue.release(job.id, wid, str(exc))
            return None
        except Exception as exc:
            log.exception("job %s (%s) failed", job.id, job.kind)
            trace = traceback.format_exception(exc)[-3:]
            queue.log(job.id, "".join(trace).strip(), "error")
            error = f"{type(exc).__name__}: {exc}"
            queue.finish(job.id, wid, FAILED, error=error, message=f"failed: {error}"[:500])
            return FAILED
        finished = queue.finish(job.id, wid, SUCCEEDED, result=result, message="succeeded")
        return SUCCEEDED if finished else None
