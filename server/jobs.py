"""The job queue, kept in the store's database (tables ``jobs`` and ``job_logs``).

States: ``queued`` → ``running`` → ``succeeded`` | ``failed`` | ``cancelled``; a queued job can
be cancelled at once, a running one is asked to stop (``cancel_requested``) and its worker
stops at the next check. Workers claim jobs atomically (PostgreSQL ``FOR UPDATE SKIP LOCKED``,
SQLite ``BEGIN IMMEDIATE``), send heartbeats while they run one, and every update of a running
job is fenced by the worker's id, so a worker that lost its job cannot overwrite it.

Recovery: a running job whose heartbeat is older than the lease (its process died or hung) is
queued again while it has attempts left, and failed otherwise. A restart therefore runs the
jobs that were queued, and retries or fails the ones that were running.

Clocks: on PostgreSQL every job time (heartbeats, the lease cut-off, created/started/finished)
comes from the database server's clock, so replicas on hosts whose clocks disagree neither
take each other's live jobs nor keep a dead one past its lease. SQLite is one host's file:
there the host's clock is the only one.
"""

from __future__ import annotations

import builtins
import json
import uuid
import zlib
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from sqlalchemy import Connection, Engine, case, func, insert, select, update

from kb import schema
from kb.engine import read_transaction, write_transaction
from server.job_records import (  # the queue's records, re-exported
    CANCELLED,
    FAILED,
    FINISHED,
    QUEUED,
    RUNNING,
    STATES,
    SUCCEEDED,
    Job,
    JobNotFoundError,
    JobStateError,
    LogLine,
    db_clock,
    job_from_row,
    read_job,
)

_J, _L = schema.jobs, schema.job_logs
__all__ = [
    "CANCELLED",
    "FAILED",
    "FINISHED",
    "QUEUED",
    "RUNNING",
    "STATES",
    "SUCCEEDED",
    "Job",
    "JobNotFoundError",
    "JobQueue",
    "JobStateError",
    "LogLine",
]


class JobQueue:
    """Jobs and their logs.

    Args:
        engine: an engine on the knowledge store's database (migrated).
        max_attempts: runs a job gets when its worker dies under it (1: never retried).
    """

    def __init__(self, engine: Engine, *, max_attempts: int = 2) -> None:
        self._engine, self.max_attempts = engine, max_attempts

    # ----------------------------------------------------------------- clients
    def submit(self, kind: str, params: dict[str, Any], submitter: dict[str, Any]) -> Job:
        with write_transaction(self._engine) as conn:
            return self._insert(conn, kind, params, submitter)

    def _insert(
        self, conn: Connection, kind: str, params: dict[str, Any], submitter: dict[str, Any]
    ) -> Job:
        job_id = uuid.uuid4().hex
        conn.execute(
            insert(_J).values(
                id=job_id,
                kind=kind,
                state=QUEUED,
                params=json.dumps(params, sort_keys=True),
                submitter=json.dumps(submitter, sort_keys=True),
                progress=0.0,
                message="queued",
                attempts=0,
                max_attempts=self.max_attempts,
                cancel_requested=False,
                created_at=db_clock(conn),
            )
        )
        self._append(conn, job_id, "info", f"submitted by {submitter.get('user')}")
        # read in the same transaction: a worker may claim the job right after the commit
        return read_job(conn, job_id, 200)

    def submit_unless_pending(
        self,
        kind: str,
        decide: Callable[[builtins.list[Job]], tuple[dict[str, Any], dict[str, Any]] | None],
        *,
        recent: int = 50,
    ) -> Job | None:
        """Submit a ``kind`` job when none is queued or running and ``decide`` wants one.

        ``decide`` gets the ``recent`` latest jobs of ``kind`` (newest first) and returns
        ``(params, submitter)``, or None to submit nothing. The check and the insert are one
        transaction under a lock (PostgreSQL: an advisory transaction lock on ``kind``;
        SQLite: the write lock), so replicas deciding at once submit one job, not two.
        """
        with write_transaction(self._engine) as conn:
            if conn.dialect.name == "postgresql":
                lock = zlib.crc32(f"almanac.jobs.submit.{kind}".encode())
                conn.execute(select(func.pg_advisory_xact_lock(lock)))
            latest = conn.execute(
                select(_J)
                .where(_J.c.kind == kind)
                .order_by(_J.c.created_at.desc(), _J.c.id)
                .limit(recent)
            ).all()
            pending = conn.execute(
                select(func.count()).where(_J.c.kind == kind, _J.c.state.in_((QUEUED, RUNNING)))
            ).scalar_one()
            if pending:
                return None
            chosen = decide([job_from_row(row) for row in latest])
            if chosen is None:
                return None
            params, submitter = chosen
            return self._insert(conn, kind, params, submitter)

    def get(self, job_id: str, *, log_lines: int = 200) -> Job:
        with read_transaction(self._engine) as conn:
            return read_job(conn, job_id, log_lines)

    def list(
        self, *, state: str | None = None, kind: str | None = None, limit: int = 50
    ) -> list[Job]:
        query = select(_J).order_by(_J.c.created_at.desc(), _J.c.id).limit(limit)
        if state is not None:
            query = query.where(_J.c.state == state)
        if kind is not None:
            query = query.where(_J.c.kind == kind)
        with read_transaction(self._engine) as conn:
            return [job_from_row(row) for row in conn.execute(query)]

    def cancel(self, job_id: str) -> Job:
        """Cancel a queued job, or ask a running one to stop; 409-worthy if it has finished."""
        with write_transaction(self._engine) as conn:
            row = conn.execute(select(_J.c.state).where(_J.c.id == job_id)).first()
            if row is None:
                raise JobNotFoundError(job_id)
            if row.state in FINISHED:
                raise JobStateError(f"job {job_id} has already {row.state}")
            if row.state == QUEUED:
                conn.execute(
                    update(_J)
                    .where(_J.c.id == job_id)
                    .values(
                        state=CANCELLED,
                        finished_at=db_clock(conn),
                        message="cancelled before it ran",
                    )
                )
                self._append(conn, job_id, "info", "cancelled before it ran")
            else:
                conn.execute(update(_J).where(_J.c.id == job_id).values(cancel_requested=True))
                self._append(conn, job_id, "info", "cancellation requested")
        return self.get(job_id)

    def counts_by_state(self) -> dict[str, int]:
        with read_transaction(self._engine) as conn:
            rows = conn.execute(select(_J.c.state, func.count()).group_by(_J.c.state)).all()
        counts = dict.fromkeys(STATES, 0)
        counts.update({state: int(n) for state, n in rows})
        return counts

    # ----------------------------------------------------------------- workers
    def claim(self, worker_id: str, kinds: builtins.list[str]) -> Job | None:
        """Atomically take the oldest queued job of ``kinds``; None when there is none."""
        with write_transaction(self._engine) as conn:
            now = db_clock(conn)
            found = conn.execute(
                select(_J.c.id)
                .where(_J.c.state == QUEUED, _J.c.kind.in_(kinds))
                .order_by(_J.c.created_at, _J.c.id)
                .limit(1)
                .with_for_update(skip_locked=True)
            ).first()
            if found is None:
                return None
            claimed = conn.execute(
                update(_J)
                .where(_J.c.id == found.id, _J.c.state == QUEUED)
                .values(
                    state=RUNNING,
                    worker_id=worker_id,
                    attempts=_J.c.attempts + 1,
                    started_at=now,
                    heartbeat_at=now,
                    message="running",
                )
            ).rowcount
            if claimed != 1:
                return None
            self._append(conn, found.id, "info", f"started on worker {worker_id}")
        return self.get(found.id)

    def heartbeat(self, job_id: str, worker_id: str) -> bool | None:
        """Renew the lease; return ``cancel_requested``, or None when the job is no longer ours."""
        with write_transaction(self._engine) as conn:
            touched = conn.execute(
                update(_J)
                .where(_J.c.id == job_id, _J.c.worker_id == worker_id, _J.c.state == RUNNING)
                .values(heartbeat_at=db_clock(conn))
            ).rowcount
            if touched != 1:
                return None
            return bool(
                conn.execute(select(_J.c.cancel_requested).where(_J.c.id == job_id)).scalar_one()
            )

    def report(
        self, job_id: str, worker_id: str, progress: float | None, message: str | None
    ) -> bool:
        """Record progress (0..1) and a status message; False when the job is no longer ours."""
        values: dict[str, Any] = {}
        if progress is not None:
            values["progress"] = min(1.0, max(0.0, progress))
        if message is not None:
            values["message"] = message
        with write_transaction(self._engine) as conn:
            values["heartbeat_at"] = db_clock(conn)
            return (
                conn.execute(
                    update(_J)
                    .where(_J.c.id == job_id, _J.c.worker_id == worker_id, _J.c.state == RUNNING)
                    .values(**values)
                ).rowcount
                == 1
            )

    def log(self, job_id: str, line: str, level: str = "info") -> None:
        with write_transaction(self._engine) as conn:
            self._append(conn, job_id, level, line)

    def finish(
        self,
        job_id: str,
        worker_id: str,
        state: str,
        *,
        result: dict[str, Any] | None = None,
        error: str | None = None,
        message: str | None = None,
    ) -> bool:
        """End a running job held by ``worker_id``; False when it was no longer ours."""
        if state not in FINISHED:
            raise ValueError(f"not a final state: {state!r}")
        values: dict[str, Any] = {
            "state": state,
            "message": message or state,
            "result": json.dumps(result, sort_keys=True, default=str) if result else None,
            "error": error,
        }
        if state == SUCCEEDED:
            values["progress"] = 1.0
        with write_transaction(self._engine) as conn:
            values["finished_at"] = db_clock(conn)
            done = conn.execute(
                update(_J)
                .where(_J.c.id == job_id, _J.c.worker_id == worker_id, _J.c.state == RUNNING)
                .values(**values)
            ).rowcount
            if done == 1:
                self._append(conn, job_id, "error" if error else "info", message or state)
        return done == 1

    def release(self, job_id: str, worker_id: str, reason: str) -> bool:
        """Give a running job back to the queue (worker shutting down); the run is not counted."""
        with write_transaction(self._engine) as conn:
            done = conn.execute(
                update(_J)
                .where(_J.c.id == job_id, _J.c.worker_id == worker_id, _J.c.state == RUNNING)
                .values(
                    state=QUEUED,
                    worker_id=None,
                    attempts=case((_J.c.attempts > 0, _J.c.attempts - 1), else_=0),
                    message=f"queued again: {reason}",
                )
            ).rowcount
            if done == 1:
                self._append(conn, job_id, "warning", f"queued again: {reason}")
        return done == 1

    def recover(self, lease_s: float) -> builtins.list[tuple[str, str]]:
        """Requeue or fail running jobs whose heartbeat is older than ``lease_s``.

        Returns ``(job_id, new_state)`` for each recovered job.
        """
        recovered: list[tuple[str, str]] = []
        with write_transaction(self._engine) as conn:
            cutoff = db_clock(conn) - timedelta(seconds=lease_s)
            stale = conn.execute(
                select(_J.c.id, _J.c.attempts, _J.c.max_attempts, _J.c.worker_id, _J.c.kind)
                .where(_J.c.state == RUNNING, _J.c.heartbeat_at < cutoff)
                .with_for_update(skip_locked=True)
            ).all()
            for row in stale:
                retry = row.attempts < row.max_attempts
                reason = (
                    f"worker {row.worker_id} stopped responding (no heartbeat for {lease_s:g} s)"
                )
                values: dict[str, Any] = (
                    {"state": QUEUED, "worker_id": None, "message": f"retrying: {reason}"}
                    if retry
                    else {
                        "state": FAILED,
                        "finished_at": db_clock(conn),
                        "error": f"interrupted: {reason}; no attempts left "
                        f"({row.attempts}/{row.max_attempts})",
                        "message": "failed: interrupted",
                    }
                )
                conn.execute(
                    update(_J).where(_J.c.id == row.id, _J.c.state == RUNNING).values(**values)
                )
                line = (
                    f"{reason}; queued again (attempt {row.attempts + 1}/{row.max_attempts})"
                    if retry
                    else f"{reason}; failed after {row.attempts}/{row.max_attempts} attempts"
                )
                self._append(conn, row.id, "warning" if retry else "error", line)
                recovered.append((row.id, QUEUED if retry else FAILED))
        return recovered

    @staticmethod
    def _append(conn: Any, job_id: str, level: str, line: str) -> None:
        conn.execute(insert(_L).values(job_id=job_id, at=db_clock(conn), level=level, line=line))
