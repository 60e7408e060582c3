"""The mine schedule: when a mine job is due (by minutes, by new labeled experiences), what a
scheduled job mines (incrementally, from the version the last successful one covered), no
submission while one is pending, one job from replicas racing on one store (SQLite and
PostgreSQL), and a server that mines GeoQuery after N labeled experiences."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bench.datasets import load_dataset
from bench.mine_throughput import experiences_of
from kb.engine import create_store_engine
from kb.store import KnowledgeStore
from server.auth import Identity, Role
from server.jobs import FAILED, SUCCEEDED, Job, JobQueue
from server.mine_schedule import (
    FAILURE_BACKOFF_S,
    KIND,
    MineSchedule,
    MineScheduler,
    due,
    history,
    new_labeled_experiences,
)
from tests.agents.learn.conftest import GEOQUERY, labeled
from tests.server.conftest import Server
from ukf import ExperienceUKF

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
DATABASE = "geoquery"


class FakeClock:
    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture()
def queue(store: KnowledgeStore, store_url: str) -> Iterator[JobQueue]:
    engine = create_store_engine(store_url)
    yield JobQueue(engine)
    engine.dispose()


def _experiences(count: int, start: int = 0, **fields: Any) -> list[ExperienceUKF]:
    return [
        labeled(f"how many states border state {i}?", f"SELECT {i}", DATABASE, **fields)
        for i in range(start, start + count)
    ]


def _finish(queue: JobQueue, job: Job, state: str = SUCCEEDED, **result: Any) -> Job:
    claimed = queue.claim("test-worker", [KIND])
    assert claimed is not None and claimed.id == job.id
    queue.finish(job.id, "test-worker", state, result=result or None, error=None)
    return queue.get(job.id)


# ----------------------------------------------------------------------------- due()
def test_due_by_minutes_counts_from_the_last_mine_job() -> None:
    every_10 = MineSchedule(every_minutes=10)
    assert due(every_10, now=T0 + timedelta(minutes=9), last_at=T0, new_experiences=99) is None
    reason = due(every_10, now=T0 + timedelta(minutes=10), last_at=T0, new_experiences=0)
    assert reason is not None and "every 10" in reason
    off = MineSchedule()
    assert not off.enabled
    assert due(off, now=T0 + timedelta(days=9), last_at=T0, new_experiences=10**6) is None


def test_due_by_new_experiences_waits_after_a_failed_job() -> None:
    every_3 = MineSchedule(every_experiences=3)
    assert due(every_3, now=T0, last_at=T0, new_experiences=2) is None
    reason = due(every_3, now=T0, last_at=T0, new_experiences=3)
    assert reason is not None and "3 new experience(s)" in reason
    failed = T0 - timedelta(seconds=FAILURE_BACKOFF_S / 2)
    assert due(every_3, now=T0, last_at=failed, new_experiences=5, failed_at=failed) is None
    long_ago = T0 - timedelta(seconds=FAILURE_BACKOFF_S + 1)
    assert due(every_3, now=T0, last_at=long_ago, new_experiences=5, failed_at=long_ago)


# -------------------------------------------------------------- on a real store and queue
def test_counts_only_active_labeled_experiences_of_the_database(store, queue) -> None:
    version = store.upsert_many(_experiences(2))
    unlabeled = ExperienceUKF.create("q?", "SELECT 1", database=DATABASE, dialect="sqlite")
    store.upsert_many([*_experiences(1, 10), unlabeled, *_experiences(2, 20)])
    store.upsert_many([labeled("other db?", "SELECT 2", "autofin")])
    assert new_labeled_experiences(store, None, DATABASE) == 5
    assert new_labeled_experiences(store, version, DATABASE) == 3
    assert new_labeled_experiences(store, version, None) == 4
    assert new_labeled_experiences(store, version, DATABASE, mode="unlabeled") == 1
    assert new_labeled_experiences(store, version, DATABASE, mode="both") == 4


def test_the_scheduled_job_mines_in_the_configured_mode(store, queue) -> None:
    store.upsert_many([ExperienceUKF.create(f"q{i}?", database=DATABASE) for i in range(3)])
    schedule = MineSchedule(every_experiences=3, mode="unlabeled", gate=True)
    job = MineScheduler(queue, store, schedule, database=DATABASE, clock=FakeClock()).tick()
    assert job is not None and job.params["mode"] == "unlabeled" and job.params["gate"]
    labeled_only = MineScheduler(
        queue, store, MineSchedule(every_experiences=3), database=DATABASE, clock=FakeClock()
    )
    _finish(queue, job)
    assert labeled_only.tick() is None  # no labeled experience is new


def test_mines_after_n_new_experiences_incrementally_and_never_while_one_is_pending(
    store, queue
) -> None:
    clock = FakeClock()
    scheduler = MineScheduler(
        queue, store, MineSchedule(every_experiences=3), database=DATABASE, clock=clock
    )
    store.upsert_many(_experiences(2))
    assert scheduler.tick() is None
    store.upsert_many(_experiences(1, 2))
    first = scheduler.tick()
    assert first is not None and first.kind == KIND and first.state == "queued"
    assert "since_version" not in first.params  # no mine job before: everything
    assert first.submitter["schedule"]["store_version"] == store.version
    identity = Identity.from_dict(first.submitter)
    assert (identity.role, identity.user, identity.key_id) == (Role.ADMIN, "scheduler", "scheduler")
    store.upsert_many(_experiences(5, 3))
    assert scheduler.tick() is None  # queued
    queue.claim("test-worker", [KIND])
    assert scheduler.tick() is None  # running
    queue.finish(first.id, "test-worker", SUCCEEDED, result={"store_version": None})
    second = scheduler.tick()  # the 5 written after the first was submitted
    assert second is not None
    assert second.params["since_version"] == first.submitter["schedule"]["store_version"]
    _finish(queue, second, store_version=store.version)
    assert scheduler.tick() is None
    store.upsert_many(_experiences(3, 100))
    third = scheduler.tick()
    assert third is not None
    assert third.params["since_version"] == second.submitter["schedule"]["store_version"]
    assert [j.id for j in queue.list(kind=KIND)] == [third.id, second.id, first.id]


def test_mines_every_n_minutes_after_the_last_one_ended(store, queue) -> None:
    clock = FakeClock()
    scheduler = MineScheduler(queue, store, MineSchedule(every_minutes=10), clock=clock)
    assert scheduler.tick() is None
    clock.advance(minutes=11)
    first = scheduler.tick()
    assert (
        first is not None and "min since the last mine job" in first.submitter["schedule"]["reason"]
    )
    clock.advance(minutes=30)
    assert scheduler.tick() is None  # still queued
    _finish(queue, first, store_version=7)
    ended = queue.get(first.id).finished_at  # the wait counts from the job's end

    assert ended is not None
    clock.now = ended + timedelta(minutes=9)
    assert scheduler.tick() is None
    clock.now = ended + timedelta(minutes=10, seconds=1)
    second = scheduler.tick()
    assert (
        second is not None
        and second.params["since_version"] == first.submitter["schedule"]["store_version"]
    )


def test_a_failed_job_is_not_covered_and_the_count_waits(store, queue) -> None:
    clock = FakeClock(datetime.now(UTC))
    scheduler = MineScheduler(queue, store, MineSchedule(every_experiences=1), clock=clock)
    store.upsert_many(_experiences(1))
    first = scheduler.tick()
    assert first is not None
    claimed = queue.claim("w", [KIND])
    assert claimed is not None
    queue.finish(first.id, "w", FAILED, error="boom")
    assert history(queue.list(kind=KIND)).covered is None
    assert scheduler.tick() is None  # backing off
    clock.advance(seconds=FAILURE_BACKOFF_S + 60)
    again = scheduler.tick()
    assert again is not None and "since_version" not in again.params  # mines it all again


def test_a_manual_job_covers_what_it_wrote_only_when_it_mined_everything(store, queue) -> None:
    ops = Identity("k1", Role.OPS, "olga").to_dict()

    def manual(params: dict[str, Any], **result: Any) -> Job:
        job = queue.submit(KIND, params, ops)
        return _finish(queue, job, **{"database": DATABASE, "dry_run": False, **result})

    whole = {"scope": {"workspace": None, "left_out": 0}, "store_version": 5}
    one_workspace = {"scope": {"workspace": "sales", "left_out": 3}, "store_version": 9}
    manual({}, **whole)
    assert history(queue.list(kind=KIND), DATABASE).covered == 5
    assert history(queue.list(kind=KIND), "autofin").covered is None  # another database
    manual({}, **one_workspace)
    manual({"since": "2026-01-01T00:00:00+00:00"}, **{**whole, "store_version": 11})
    manual({}, **{**whole, "store_version": 12, "dry_run": True})
    manual({}, **{**whole, "store_version": None})  # wrote nothing
    assert history(queue.list(kind=KIND), DATABASE).covered == 5


def test_replicas_racing_submit_one_job_per_due_point(store, store_url, queue) -> None:
    """Two replicas (own engines, as two servers on one store), three threads each, tick at
    the same moment, twice: one job each time."""
    engines = [create_store_engine(store_url) for _ in range(2)]
    try:
        schedulers = [
            MineScheduler(JobQueue(e), store, MineSchedule(every_experiences=2), database=DATABASE)
            for e in engines
        ]
        for round_ in range(2):
            store.upsert_many(_experiences(2, 10 * round_))
            submitted = _race(schedulers, threads_each=3)
            assert len(submitted) == 1, submitted
            assert len([j for j in queue.list(kind=KIND) if j.state == "queued"]) == 1
            _finish(queue, submitted[0], store_version=store.version)
            # finished: the same due point does not come back
            assert all(s.tick() is None for s in schedulers)
        assert len(queue.list(kind=KIND)) == 2
    finally:
        for engine in engines:
            engine.dispose()


def _race(schedulers: list[MineScheduler], threads_each: int) -> list[Job]:
    """Every scheduler ticks from ``threads_each`` threads at once; the jobs submitted."""
    barrier = threading.Barrier(len(schedulers) * threads_each)
    submitted: list[Job] = []
    errors: list[BaseException] = []

    def race(scheduler: MineScheduler) -> None:
        try:
            barrier.wait(timeout=30)
            job = scheduler.tick()
            if job is not None:
                submitted.append(job)
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [
        threading.Thread(target=race, args=(s,)) for s in schedulers for _ in range(threads_each)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors, errors
    return submitted


# ------------------------------------------------------------------------ end to end
@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_a_server_mines_geoquery_after_n_labeled_experiences(make_server) -> None:
    if not GEOQUERY.is_file():
        pytest.skip(f"benchmark database {GEOQUERY} not found (set ALMANAC_BENCH_DATA)")
    examples = [e for e in load_dataset("geoquery").examples if e.split == "train"][:40]
    experiences = experiences_of(examples)
    database = examples[0].database
    server: Server = make_server(
        target_url=f"sqlite:///{GEOQUERY}",
        target_name=database,
        jobs={"mine_every_experiences": 20, "mine_check_s": 0.1},
    )
    profiled = server.request("POST", "/v1/jobs", "ops", json={"kind": "profile", "params": {}})
    assert server.wait_job(profiled.json()["id"])["state"] == "succeeded"
    scheduler = server.state.mine_scheduler
    assert scheduler is not None
    server.state.store.upsert_many(experiences[:19])
    assert scheduler.tick() is None  # 19 < 20
    server.state.store.upsert_many(experiences[19:20])
    first = _wait_for_mine_jobs(server, 1)[0]
    assert first["submitted_by"]["user"] == "scheduler", first
    first = server.wait_job(first["id"], timeout=120)
    assert first["state"] == "succeeded", first
    report = first["result"]
    assert report["experiences"] == 20 and report["database"] == database
    assert report["merge"]["inserted"] > 0 and report["candidate_ids"]
    audit = server.state.audit.list(action="mine")
    assert [(a.user, a.key_id, a.job_id) for a in audit] == [
        ("scheduler", "scheduler", first["id"])
    ]

    server.state.store.upsert_many(experiences[20:40])
    second = server.wait_job(_wait_for_mine_jobs(server, 2)[0]["id"], timeout=120)
    assert second["state"] == "succeeded", second
    assert second["params"]["since_version"] == first["submitted_by"]["schedule"]["store_version"]
    assert second["result"]["experiences"] == 20  # only the new ones
    assert scheduler.tick() is None


def _wait_for_mine_jobs(server: Server, count: int, timeout: float = 60) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        jobs = server.request("GET", "/v1/jobs", "ops", params={"kind": KIND}).json()["items"]
        if len(jobs) >= count or time.monotonic() > deadline:
            assert len(jobs) == count, jobs
            return jobs
        time.sleep(0.1)
