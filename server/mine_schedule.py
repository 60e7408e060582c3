"""The mine schedule: a ``mine`` job every N minutes, or once N experiences are new.

Settings ``ALMANAC_JOBS__MINE_EVERY_MINUTES`` and ``ALMANAC_JOBS__MINE_EVERY_EXPERIENCES``
(0: off; both may be on: whichever comes first); ``ALMANAC_JOBS__MINE_MODE`` says what the
jobs mine (``labeled``, the default; ``unlabeled``; ``both``) and so which experiences
count, and ``ALMANAC_JOBS__MINE_GATE`` whether they run the regression gate (activating
what passes) or leave their candidates to the review queue. A :class:`MineScheduler`
thread looks every ``ALMANAC_JOBS__MINE_CHECK_S`` seconds and only submits; any replica's
worker runs the job.

The decision (:func:`due`) reads the queue's latest ``mine`` jobs (:func:`history`):

- minutes: since the newest mine job ended (or was created, while it has no end), or since
  the scheduler started when there is none;
- new experiences: active experiences of the target's database the job's mode would mine
  (labeled or verified with SQL; unlabeled with a question; both), written after the store
  version the last successful mine job covered. An unlabeled job remembers its votes on the
  experiences it asked, which counts them once more: the next job finds every vote
  remembered and asks nothing.

A scheduled job mines incrementally: its ``since_version`` is that covered version, and its
submitter records the store version at submission (``schedule.store_version``), which is
what it covers once it succeeds, even when it wrote nothing (a manual job covers the version
its result wrote, when it mined every workspace's experiences of the database without a
time window). Nothing is submitted while a mine job is queued or running, nor by count
for :data:`FAILURE_BACKOFF_S` after a mine job failed or was cancelled. Every replica runs a
scheduler; the check and the submission are one locked transaction
(:meth:`~server.jobs.JobQueue.submit_unless_pending`), so replicas never submit twice.

The submitter is :data:`SCHEDULER` (role admin: it mines every workspace's experiences, as
an admin key would), shown as user ``scheduler`` in the job and the audit log.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from kb.store import KnowledgeStore
from server.auth import Identity, Role
from server.jobs import CANCELLED, FAILED, SUCCEEDED, Job, JobQueue
from server.settings import JobSettings
from ukf import ExperienceUKF
from ukf.tags import tag_values

log = logging.getLogger(__name__)

KIND = "mine"
SCHEDULER = Identity(key_id="scheduler", role=Role.ADMIN, user="scheduler")
"""Who submits scheduled mine jobs (no API key stands behind it)."""
FAILURE_BACKOFF_S = 600.0
"""After a mine job failed or was cancelled, the count trigger waits this long."""
_READ_BATCH = 500

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class MineSchedule:
    """When to mine: every ``every_minutes`` minutes and/or ``every_experiences`` new
    labeled experiences (0: off), looking every ``check_s`` seconds."""

    every_minutes: float = 0.0
    every_experiences: int = 0
    llm_pairer: bool = False
    check_s: float = 30.0
    mode: str = "labeled"
    gate: bool = False

    @classmethod
    def of(cls, settings: JobSettings) -> MineSchedule:
        return cls(
            every_minutes=settings.mine_every_minutes,
            every_experiences=settings.mine_every_experiences,
            llm_pairer=settings.mine_llm_pairer,
            check_s=settings.mine_check_s,
            mode=settings.mine_mode,
            gate=settings.mine_gate,
        )

    @property
    def enabled(self) -> bool:
        return self.every_minutes > 0 or self.every_experiences > 0


@dataclass(frozen=True)
class History:
    """What the latest mine jobs tell the schedule."""

    last_at: datetime | None = None
    """When the newest mine job ended (created, while it has not); None: no mine job yet."""
    covered: int | None = None
    """Store version up to which the last successful mine job mined; None: none did."""
    failed_at: datetime | None = None
    """When the newest mine job failed or was cancelled; None when it did not."""


def covered_version(job: Job, database: str | None = None) -> int | None:
    """The store version up to which a succeeded mine ``job`` mined every labeled experience
    of ``database`` (None: unknown, or the job mined only part of them: a dry run, a time
    window, one workspace, another database)."""
    result = job.result or {}
    if job.state != SUCCEEDED or result.get("dry_run"):
        return None
    schedule = job.submitter.get("schedule")
    if isinstance(schedule, dict) and isinstance(schedule.get("store_version"), int):
        return int(schedule["store_version"])  # a scheduled job: the version at submission
    whole = (
        job.params.get("since") is None
        and job.params.get("until") is None
        and (result.get("scope") or {}).get("workspace") is None
        and result.get("database") in (database, None)
    )
    version = result.get("store_version")
    return int(version) if whole and isinstance(version, int) else None


def history(jobs: list[Job], database: str | None = None) -> History:
    """:class:`History` of ``jobs``, the latest mine jobs, newest first (``database``: the
    one the schedule mines, see :func:`covered_version`)."""
    if not jobs:
        return History()
    newest = jobs[0]
    covered = next((v for job in jobs if (v := covered_version(job, database)) is not None), None)
    failed_at = newest.finished_at if newest.state in (FAILED, CANCELLED) else None
    return History(newest.finished_at or newest.created_at, covered, failed_at)


def due(
    schedule: MineSchedule,
    *,
    now: datetime,
    last_at: datetime,
    new_experiences: int,
    failed_at: datetime | None = None,
) -> str | None:
    """Why a mine job is due now (a reason for the log), or None when it is not.

    ``last_at``: when the newest mine job ended (or the scheduler started, without one);
    ``new_experiences``: labeled experiences written since the last successful mine job;
    ``failed_at``: when the newest mine job failed or was cancelled, if it did."""
    if schedule.every_minutes > 0:
        waited = now - last_at
        if waited >= timedelta(minutes=schedule.every_minutes):
            minutes = waited.total_seconds() / 60
            return f"{minutes:.1f} min since the last mine job (every {schedule.every_minutes:g})"
    if schedule.every_experiences > 0 and new_experiences >= schedule.every_experiences:
        if failed_at is not None and now - failed_at < timedelta(seconds=FAILURE_BACKOFF_S):
            return None
        return f"{new_experiences} new experience(s) (every {schedule.every_experiences})"
    return None


def new_labeled_experiences(
    store: KnowledgeStore, since_version: int | None, database: str | None, mode: str = "labeled"
) -> int:
    """Active labeled or verified experiences with SQL (``mode`` ``unlabeled``: unlabeled
    ones with a question; ``both``: either) of ``database`` (None: any) written after
    ``since_version`` (None: ever), as a mine job of that mode would select them."""
    ids = [
        uid for _seq, uid, kind in store.written_since(since_version or 0) if kind == "experience"
    ]
    count = 0
    for start in range(0, len(ids), _READ_BATCH):
        for entry in store.get_many(ids[start : start + _READ_BATCH]).values():
            if not isinstance(entry, ExperienceUKF) or entry.inactive_mark:
                continue
            is_labeled = entry.labeled or entry.verified
            wanted = {
                "labeled": is_labeled and bool(entry.sql),
                "unlabeled": not is_labeled and bool(entry.question),
            }
            if not (wanted["labeled"] or wanted["unlabeled"] if mode == "both" else wanted[mode]):
                continue
            if database is None or database in tag_values(entry.tags, "DATABASE"):
                count += 1
    return count


class MineScheduler:
    """Submits scheduled ``mine`` jobs to ``queue`` (see the module's docstring).

    Args:
        queue: the job queue (shared by every replica).
        store: the knowledge store whose experiences are counted.
        schedule: when to mine.
        database: the ``[DATABASE:...]`` whose experiences count (the target's); None: any.
        clock: now, in UTC (tests pass a fake one).
    """

    def __init__(
        self,
        queue: JobQueue,
        store: KnowledgeStore,
        schedule: MineSchedule,
        *,
        database: str | None = None,
        clock: Clock = utc_now,
    ) -> None:
        self._queue, self._store, self.schedule = queue, store, schedule
        self._database, self._clock = database, clock
        self.started_at = clock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ decision
    def tick(self) -> Job | None:
        """Submit a mine job if one is due and none is pending; return it (None: none)."""
        if not self.schedule.enabled:
            return None
        job = self._queue.submit_unless_pending(KIND, self._decide)
        if job is not None:
            reason = job.submitter["schedule"]["reason"]
            log.info(
                "mine schedule: submitted mine job %s (since store version %s): %s",
                job.id,
                job.params.get("since_version"),
                reason,
            )
        return job

    def _decide(self, jobs: list[Job]) -> tuple[dict[str, Any], dict[str, Any]] | None:
        now, seen = self._clock(), history(jobs, self._database)
        new = (
            new_labeled_experiences(
                self._store, seen.covered, self._database, mode=self.schedule.mode
            )
            if self.schedule.every_experiences > 0
            else 0
        )
        reason = due(
            self.schedule,
            now=now,
            last_at=seen.last_at or self.started_at,
            new_experiences=new,
            failed_at=seen.failed_at,
        )
        if reason is None:
            return None
        params: dict[str, Any] = {
            "mode": self.schedule.mode,
            "llm_pairer": self.schedule.llm_pairer,
        }
        if self.schedule.gate:
            params["gate"] = True
        if seen.covered is not None:
            params["since_version"] = seen.covered
        schedule = {"reason": reason, "store_version": self._store.version}
        return params, {**SCHEDULER.to_dict(), "schedule": schedule}

    # -------------------------------------------------------------------- thread
    def start(self) -> None:
        if self._thread is not None or not self.schedule.enabled:
            return
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name="almanac-mine-schedule", daemon=True)
        self._thread.start()
        log.info("mine schedule: %s", self.schedule)

    def stop(self, timeout: float = 10.0) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _run(self) -> None:
        while not self._stopping.wait(self.schedule.check_s):
            try:
                self.tick()
            except Exception:  # a store hiccup must not end the schedule
                log.exception("mine schedule: the check failed; trying again later")
