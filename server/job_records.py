"""The job queue's records (:mod:`server.jobs`): a job, its log lines, the states, and how
they are read from the ``jobs`` and ``job_logs`` tables."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, overload

from sqlalchemy import Connection, func, select

from kb import schema

_J, _L = schema.jobs, schema.job_logs
QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED = (
    "queued",
    "running",
    "succeeded",
    "failed",
    "cancelled",
)
STATES = (QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED)
FINISHED = frozenset({SUCCEEDED, FAILED, CANCELLED})


class JobNotFoundError(KeyError):
    def __init__(self, job_id: str) -> None:
        super().__init__(job_id)
        self.job_id = job_id

    def __str__(self) -> str:
        return f"unknown job id {self.job_id!r}"


class JobStateError(RuntimeError):
    """The job is not in a state that allows the operation (e.g. cancelling a finished job)."""


@overload
def as_utc(value: datetime) -> datetime: ...
@overload
def as_utc(value: datetime | None) -> datetime | None: ...
def as_utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def utc_now() -> datetime:
    """This host's clock (SQLite's only clock; see :func:`db_clock`)."""
    return datetime.now(UTC)


def db_clock(conn: Connection) -> Any:
    """Now, as a value to write or compare in ``conn``'s transaction: the database server's
    clock on PostgreSQL (one clock for every replica), this host's clock elsewhere."""
    return func.now() if conn.dialect.name == "postgresql" else utc_now()


@dataclass(frozen=True)
class LogLine:
    id: int
    at: datetime
    level: str
    line: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "at": self.at, "level": self.level, "line": self.line}


@dataclass(frozen=True)
class Job:
    id: str
    kind: str
    state: str
    params: dict[str, Any]
    submitter: dict[str, Any]
    progress: float
    message: str
    result: dict[str, Any] | None
    error: str | None
    attempts: int
    max_attempts: int
    cancel_requested: bool
    worker_id: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    heartbeat_at: datetime | None
    log: list[LogLine] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.state in FINISHED

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "state": self.state,
            "params": self.params,
            "submitted_by": self.submitter,
            "progress": self.progress,
            "message": self.message,
            "result": self.result,
            "error": self.error,
            "attempts": self.attempts,
            "max_attempts": self.max_attempts,
            "cancel_requested": self.cancel_requested,
            "worker_id": self.worker_id,
            "created_at": self.created_at,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "heartbeat_at": self.heartbeat_at,
            "log": [line.to_dict() for line in self.log],
        }


def read_job(conn: Any, job_id: str, log_lines: int) -> Job:
    row = conn.execute(select(_J).where(_J.c.id == job_id)).first()
    if row is None:
        raise JobNotFoundError(job_id)
    lines = conn.execute(
        select(_L).where(_L.c.job_id == job_id).order_by(_L.c.id.desc()).limit(log_lines)
    ).all()
    return job_from_row(
        row, [LogLine(r.id, as_utc(r.at), r.level, r.line) for r in reversed(lines)]
    )


def job_from_row(row: Any, log: list[LogLine] | None = None) -> Job:
    return Job(
        id=row.id,
        kind=row.kind,
        state=row.state,
        params=json.loads(row.params),
        submitter=json.loads(row.submitter),
        progress=row.progress,
        message=row.message,
        result=json.loads(row.result) if row.result is not None else None,
        error=row.error,
        attempts=row.attempts,
        max_attempts=row.max_attempts,
        cancel_requested=row.cancel_requested,
        worker_id=row.worker_id,
        created_at=as_utc(row.created_at),
        started_at=as_utc(row.started_at),
        finished_at=as_utc(row.finished_at),
        heartbeat_at=as_utc(row.heartbeat_at),
        log=log or [],
    )
