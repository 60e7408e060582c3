"""Two ``almanac serve`` replicas on one PostgreSQL knowledge store, as real processes.

What a deployment behind a load balancer relies on, checked rather than assumed:

1. a job queued through one replica is claimed and run exactly once, whichever replica's
   worker takes it, and a job cancelled through one replica stops on the other;
2. knowledge written through one replica is served by the other (GET at once, search within
   the index refresh interval), and so are updates and deletions;
3. a key revoked through one replica is refused by the other within the auth cache time;
4. a replica killed (SIGKILL) in the middle of a job hands the job to the other once its lease
   runs out, and the job completes once;
5. a replica whose pepper differs from the store's keys' refuses to start (it would refuse
   every key);
6. leases hold when the replicas' host clocks disagree (the database's clock decides).

Each replica has its own data folder (nothing shared but the store and the pepper), no LLM,
no embedder; the target is a generated SQLite file, big enough that profiling it takes a few
seconds (the job killed in 4). Every wait is a bounded poll that says what it saw last.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from kb.engine import create_store_engine
from kb.store import KnowledgeStore
from server import job_records
from server.jobs import JobQueue
from tests.support.postgres import free_port, new_database
from tests.support.replicas import (
    AUTH_CACHE_S,
    REFRESH_S,
    SLACK_S,
    TARGET_TABLES,
    Pair,
    Replica,
    audit_of_job,
    job_of,
    lines,
    make_target,
    replica_env,
    started_pair,
    wait_for,
)
from ukf import KnowledgeUKF

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


@pytest.fixture(scope="module")
def target_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    return make_target(tmp_path_factory.mktemp("target") / "big.sqlite")


@pytest.fixture(scope="module")
def pair(pg_url: str, target_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    """Replicas shared by checks 1-3 (none of them stops a replica)."""
    with (
        new_database(pg_url, "r") as store_url,
        started_pair(store_url, tmp_path_factory.mktemp("replicas"), target_url) as started,
    ):
        yield started


# ------------------------------------------------------------------------------ 1. jobs
def submit_burst(pair: Pair, bodies: list[dict[str, Any]]) -> list[str]:
    """Queue ``bodies`` through A at once, so the queue holds more than A's workers take."""
    submitted: list[str] = []
    lock = threading.Lock()

    def submit(body: dict[str, Any]) -> None:
        job = pair.a.ok("POST", "/v1/jobs", pair.key("ops"), json=body)
        with lock:
            submitted.append(job["id"])

    threads = [threading.Thread(target=submit, args=(body,)) for body in bodies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(submitted) == len(bodies), "a submission failed (see above)"
    return submitted


def test_each_job_is_claimed_and_run_once_across_replicas(pair: Pair):
    """Bursts of import and reindex jobs through A, until both replicas' workers have taken
    some (the claims did compete; usually the first burst does it, four at most)."""
    ops, admin = pair.key("ops"), pair.key("admin")
    jobs: list[dict[str, Any]] = []
    imported: list[KnowledgeUKF] = []
    by_replica = {"A": 0, "B": 0}
    for burst in range(4):
        entries = [
            KnowledgeUKF.create(f"job-{burst}-{i}", f"import {burst}.{i}") for i in range(16)
        ]
        bodies: list[dict[str, Any]] = [
            {"kind": "reindex", "params": {}}
            if i % 4 == 0
            else {"kind": "import", "params": {"jsonl": entry.to_json()}}
            for i, entry in enumerate(entries)
        ]
        imported += [entry for i, entry in enumerate(entries) if i % 4]
        submitted = submit_burst(pair, bodies)

        def all_finished(ids: list[str] = submitted) -> tuple[bool, Any]:
            seen = [job_of(pair.b, ops, job_id) for job_id in ids]
            return all(job["finished_at"] for job in seen), [j["state"] for j in seen]

        wait_for(f"every job of burst {burst} finished (seen through B)", all_finished, 60)
        for job_id in submitted:
            job = job_of(pair.b, ops, job_id)
            replica = pair.replica_of(job["worker_id"])
            assert replica is not None, f"job {job_id} ran on no replica: {job['worker_id']}"
            by_replica[replica.name] += 1
            jobs.append(job)
        if all(by_replica.values()):
            break
    print(f"jobs run per replica: {by_replica} in {burst + 1} burst(s)")
    assert all(by_replica.values()), f"one replica's workers took every job: {by_replica}"

    for job in jobs:
        assert job["state"] == "succeeded", job
        assert job["attempts"] == 1, f"job {job['id']} ran {job['attempts']} times: {job['log']}"
        assert len(lines(job, "started on worker")) == 1, job["log"]
        assert len(lines(job, "succeeded")) == 1, job["log"]
    audit = pair.b.ok("GET", "/v1/audit?action=import&limit=1000", admin)["items"]
    for job in (job for job in jobs if job["kind"] == "import"):
        records = [item for item in audit if item["job_id"] == job["id"]]
        assert len(records) == 1, f"import job {job['id']} wrote {len(records)} times: {records}"
        assert job["result"]["imported"] == 1, job["result"]
    for entry in imported:
        assert pair.b.ok("GET", f"/v1/knowledge/{entry.id}", ops)["name"] == entry.name


def test_a_job_cancelled_through_one_replica_stops_on_the_other(pair: Pair):
    """The cancel flag travels through the store: the running replica's heartbeat picks it
    up, and the profile stops before it writes anything."""
    ops, admin = pair.key("ops"), pair.key("admin")
    job_id = pair.a.ok("POST", "/v1/jobs", ops, json={"kind": "profile", "params": {}})["id"]

    def running() -> tuple[bool, Any]:
        job = job_of(pair.a, ops, job_id)
        return job["state"] == "running", job["state"]

    wait_for("the profile job starts", running, 30)
    owner = pair.replica_of(job_of(pair.a, ops, job_id)["worker_id"])
    assert owner is not None
    other = pair.b if owner is pair.a else pair.a
    asked = other.ok("DELETE", f"/v1/jobs/{job_id}", ops)
    assert asked["cancel_requested"] and asked["state"] == "running", asked

    def finished() -> tuple[bool, Any]:
        job = job_of(other, ops, job_id)
        return job["finished_at"] is not None, job["state"]

    assert wait_for(f"replica {owner.name} stops the job", finished, 60) == "cancelled"
    assert audit_of_job(other, admin, job_id) == [], "the cancelled profile wrote knowledge"
    assert other.ok("GET", "/v1/knowledge?type=table", ops)["count"] == 0


# ------------------------------------------------------------------------- 2. knowledge
def test_knowledge_written_through_one_replica_is_served_by_the_other(pair: Pair):
    ops = pair.key("ops")
    entry = KnowledgeUKF.create(
        "replica-probe", "written through A", synonyms=["zephyr quota ratio"]
    )
    created = pair.a.request("POST", "/v1/knowledge", ops, json=entry.to_dict())
    assert created.status_code == 201, created.text
    written = time.monotonic()

    def served_by_b() -> tuple[bool, Any]:
        reply = pair.b.request("GET", f"/v1/knowledge/{entry.id}", ops)
        return reply.status_code == 200, reply.text

    wait_for("B serves the entry written through A by id", served_by_b, SLACK_S)

    def search_b(query: str) -> list[str]:
        body = {"mode": "string", "query": query, "include": "id"}
        return [
            hit["id"] for hit in pair.b.ok("POST", "/v1/knowledge/search", ops, json=body)["hits"]
        ]

    def found(query: str, present: bool) -> Callable[[], tuple[bool, Any]]:
        def probe() -> tuple[bool, Any]:
            hits = search_b(query)
            return (entry.id in hits) == present, hits

        return probe

    bound = REFRESH_S + SLACK_S
    wait_for(
        "B's string search finds the entry written through A",
        found("our zephyr quota ratio", True),
        bound,
    )
    lag = time.monotonic() - written
    print(f"B searched A's write after {lag:.2f} s (refresh interval {REFRESH_S} s)")

    patched = pair.a.request(
        "PATCH", f"/v1/knowledge/{entry.id}", ops, json={"synonyms": ["boreal quota ratio"]}
    )
    assert patched.status_code == 200, patched.text
    wait_for(
        "B's search follows A's update (new synonym)", found("boreal quota ratio", True), bound
    )
    wait_for(
        "B's search follows A's update (old synonym)", found("zephyr quota ratio", False), bound
    )
    assert pair.b.ok("GET", f"/v1/knowledge/{entry.id}", ops)["synonyms"] == ["boreal quota ratio"]

    deleted = pair.a.request("DELETE", f"/v1/knowledge/{entry.id}", ops)
    assert deleted.status_code == 200, deleted.text
    wait_for("B's search drops the entry A deleted", found("boreal quota ratio", False), bound)


# --------------------------------------------------------------------------- 3. keys
def test_a_key_revoked_on_one_replica_is_refused_by_the_other(pair: Pair):
    admin = pair.key("admin")
    key_id, analyst = pair.keys["analyst"]
    for replica in (pair.b, pair.a):  # both have checked (and cached) the key
        assert replica.request("GET", "/v1/knowledge?limit=1", analyst).status_code == 200
    revoked = pair.a.request("DELETE", f"/v1/keys/{key_id}", admin)
    assert revoked.status_code == 200, revoked.text
    at = time.monotonic()
    assert pair.a.request("GET", "/v1/knowledge?limit=1", analyst).status_code == 401

    def refused_by_b() -> tuple[bool, Any]:
        reply = pair.b.request("GET", "/v1/knowledge?limit=1", analyst)
        return reply.status_code == 401, reply.status_code

    wait_for("B refuses the key revoked through A", refused_by_b, AUTH_CACHE_S + SLACK_S)
    lag = time.monotonic() - at
    print(f"B refused the revoked key after {lag:.2f} s (auth cache {AUTH_CACHE_S} s)")
    assert lag <= AUTH_CACHE_S + SLACK_S
    for replica in (pair.a, pair.b, pair.b):  # and keeps refusing it
        assert replica.request("GET", "/v1/knowledge?limit=1", analyst).status_code == 401


# -------------------------------------------------------------------- 4. kill mid-job
def test_a_replica_killed_mid_job_hands_the_job_to_the_other(
    pg_url: str, target_url: str, tmp_path: Path
):
    with (
        new_database(pg_url, "r") as store_url,
        started_pair(store_url, tmp_path, target_url) as pair,
    ):
        ops, admin = pair.key("ops"), pair.key("admin")
        job_id = pair.a.ok("POST", "/v1/jobs", ops, json={"kind": "profile", "params": {}})["id"]

        def running() -> tuple[bool, Any]:
            job = job_of(pair.a, ops, job_id)
            return job["state"] == "running" and job["worker_id"] is not None, job["state"]

        wait_for("the profile job starts on a replica", running, 30)
        job = job_of(pair.a, ops, job_id)
        owner = pair.replica_of(job["worker_id"])
        assert owner is not None, job["worker_id"]
        survivor = pair.b if owner is pair.a else pair.a
        owner.kill()
        killed_at = time.monotonic()
        job = job_of(survivor, ops, job_id)
        assert job["state"] == "running" and job["attempts"] == 1, (
            f"the job was no longer mid-way when its replica was killed: {job}"
        )

        def finished() -> tuple[bool, Any]:
            seen = job_of(survivor, ops, job_id)
            return seen["finished_at"] is not None, (
                seen["state"],
                seen["worker_id"],
                seen["message"],
            )

        # the lease runs out, a recovery pass (every lease/2) requeues it, a poll claims it,
        # and the profile runs again from the start
        finished_state = wait_for("the survivor finishes the job", finished, 60)
        print(f"job finished {time.monotonic() - killed_at:.1f} s after the kill: {finished_state}")
        job = job_of(survivor, ops, job_id)
        assert job["state"] == "succeeded", job
        assert job["attempts"] == 2, job
        assert pair.replica_of(job["worker_id"]) is survivor, job["worker_id"]
        assert len(lines(job, "started on worker")) == 2, job["log"]
        assert len(lines(job, "stopped responding")) == 1, job["log"]
        assert len(lines(job, "succeeded")) == 1, job["log"]
        assert len(audit_of_job(survivor, admin, job_id)) == 1
        assert job["result"]["tables"] == TARGET_TABLES, job["result"]
        tables = survivor.ok("GET", "/v1/knowledge?type=table&limit=500", ops)
        assert sorted(item["name"] for item in tables["items"]) == sorted(
            f"t{i}" for i in range(TARGET_TABLES)
        ), tables


# ----------------------------------------------------------------------- 5. peppers
def test_a_replica_with_another_pepper_refuses_to_start(pair: Pair, target_url: str, tmp_path):
    """A third replica on its own host, without ALMANAC_API_KEY_PEPPER: it makes its own
    pepper file, under which every key of the store is refused. It must not serve."""
    env = replica_env(tmp_path, pair.store_url, target_url)
    del env["ALMANAC_API_KEY_PEPPER"]
    replica = Replica("C", free_port(), env, tmp_path / "C.log")
    replica.start()
    try:

        def exited_or_serving() -> tuple[bool, Any]:
            assert replica.process is not None
            if replica.process.poll() is not None:
                return True, ("exited", replica.process.returncode)
            try:
                reply = replica.request("GET", "/v1/knowledge?limit=1", pair.key("ops"))
            except httpx.TransportError:
                return False, "not listening yet"
            return True, ("serving", reply.status_code)

        seen = wait_for("replica C exits or serves", exited_or_serving, 90)
        assert seen[0] == "exited", (
            f"replica C serves with another pepper: a key that works on A and B gets {seen[1]}"
        )
        output = replica.output()
        assert seen[1] == 2 and "ALMANAC_API_KEY_PEPPER" in output, output
    finally:
        replica.stop()


# ------------------------------------------------------------------------ 6. clocks
def test_a_lease_does_not_depend_on_the_replicas_clocks_agreeing(
    fresh_pg_database: str, monkeypatch: pytest.MonkeyPatch
):
    """Replicas on different hosts: one host's clock runs behind, another's ahead. A live job's
    heartbeat must not look stale to either, and a dead one must still be recovered."""
    with KnowledgeStore(fresh_pg_database):
        pass  # migrated
    engine = create_store_engine(fresh_pg_database)
    try:
        queue = JobQueue(engine)

        def host_clock(offset_s: float) -> None:
            monkeypatch.setattr(
                job_records, "utc_now", lambda: datetime.now(UTC) + timedelta(seconds=offset_s)
            )

        job = queue.submit("reindex", {}, {"user": "olga"})
        host_clock(-600)  # the worker's host runs ten minutes behind
        assert queue.claim("behind:1:a", ["reindex"]) is not None
        assert queue.heartbeat(job.id, "behind:1:a") is False
        for offset_s in (0, 600):  # a replica on time, and one ten minutes ahead
            host_clock(offset_s)
            assert queue.recover(lease_s=30) == [], f"a live job was taken (clock {offset_s:+} s)"
        assert queue.get(job.id).state == "running"

        host_clock(600)  # the worker dies: its lease runs out on the database's clock
        recovered = wait_for(
            "the dead worker's job is recovered",
            lambda: (bool(found := queue.recover(0.2)), found),
            5,
        )
        assert recovered == [(job.id, "queued")]
    finally:
        engine.dispose()
