"""/v1/jobs: the lifecycle of every kind, cancellation, and recovery after a restart, with
the store and the target database each on SQLite and PostgreSQL."""

from __future__ import annotations

import time

import pytest

from server.jobs import JobQueue
from server.state import build_state
from tests.server.conftest import (
    BlockingDescriber,
    ScriptedDescriber,
    make_settings,
    running_server,
)
from ukf import KnowledgeUKF


def _submit(server, kind, params=None, as_="ops"):
    reply = server.request("POST", "/v1/jobs", as_, json={"kind": kind, "params": params or {}})
    assert reply.status_code == 202, reply.text
    assert reply.json()["state"] == "queued"
    return reply.json()["id"]


def _tables(server):
    return sorted(e.name for e in server.state.store.iterate(type="table"))


def test_a_profile_job_profiles_the_target_and_is_audited(make_server, target_url):
    server = make_server(target_url=target_url, target_name="shop")
    job = server.wait_job(_submit(server, "profile", {"sample_rows": 1000}))
    assert job["state"] == "succeeded", job
    assert job["progress"] == 1.0 and job["attempts"] == 1
    assert job["result"]["tables"] == 2 and job["result"]["added"] > 0
    assert job["result"]["database"] == "shop"
    lines = [line["line"] for line in job["log"]]
    assert lines[0] == "submitted by ops" and lines[-1] == "succeeded"
    assert any("2 tables" in line for line in lines)
    assert _tables(server) == ["customers", "orders"]
    audit = server.request("GET", "/v1/audit", "admin", params={"action": "profile"}).json()
    assert audit["items"][0]["job_id"] == job["id"]
    assert audit["items"][0]["entry_count"] == job["result"]["added"]

    again = server.wait_job(_submit(server, "profile"))  # incremental: nothing changes
    assert again["state"] == "succeeded" and again["result"]["added"] == 0
    assert again["result"]["unchanged"] == job["result"]["added"]


def test_a_describe_job_uses_the_injected_describer(make_server, sqlite_target):
    describer = ScriptedDescriber()
    server = make_server(target_url=sqlite_target, describer_factory=lambda: describer)
    job = server.wait_job(_submit(server, "describe"))
    assert job["state"] == "succeeded", job
    assert job["result"]["described"] == len(describer.calls) > 0
    table = next(server.state.store.iterate(type="table", name="customers"))
    assert table.description == "Table of customers"
    assert "customers list" in table.synonyms
    hits = server.request(
        "POST",
        "/v1/knowledge/search",
        "analyst",
        json={"mode": "string", "query": "customers list"},
    ).json()["hits"]
    assert table.id in {h["id"] for h in hits}  # the indices followed the job's writes


def test_reindex_and_import_jobs(server, tmp_path):
    folder = tmp_path / "imports"
    folder.mkdir()
    lines = [KnowledgeUKF.create(f"term {i}", "text", synonyms=[f"word{i}"]) for i in range(3)]
    (folder / "terms.jsonl").write_text("".join(e.to_json() + "\n" for e in lines))
    job = server.wait_job(_submit(server, "import", {"path": "terms.jsonl"}))
    assert job["state"] == "succeeded" and job["result"]["imported"] == 3
    inline = server.wait_job(_submit(server, "import", {"jsonl": lines[0].to_json()}))
    assert inline["state"] == "succeeded" and inline["result"]["imported"] == 1
    escape = server.wait_job(_submit(server, "import", {"path": "../kb.jsonl"}))
    assert escape["state"] == "failed" and "outside the import folder" in escape["error"]
    broken = server.wait_job(_submit(server, "import", {"jsonl": "{oops"}))
    assert broken["state"] == "failed" and "line 1" in broken["error"]
    assert server.state.store.count() == 3

    reindex = server.wait_job(_submit(server, "reindex"))
    assert reindex["state"] == "succeeded"
    assert reindex["result"]["version"] == server.state.store.version
    assert reindex["result"]["patterns"] >= 6
    jobs = server.request("GET", "/v1/jobs", "ml", params={"state": "failed"}).json()
    assert {j["id"] for j in jobs["items"]} == {escape["id"], broken["id"]}


def test_submitting_checks_kind_params_permissions_and_availability(server):
    cases = [
        ({"kind": "augment"}, "ops", 422, "unknown job kind"),
        ({"kind": "import", "params": {}}, "ops", 422, "exactly one"),
        ({"kind": "import", "params": {"path": "x", "extra": 1}}, "ops", 422, "extra"),
        ({"kind": "reindex"}, "ml", 403, "lacks the 'jobs:write' permission"),
        ({"kind": "reindex"}, "analyst", 403, "lacks the 'jobs:write' permission"),  # not jobs:read
        ({"kind": "mine"}, "analyst", 403, "lacks the 'jobs:write' permission"),
        ({"kind": "profile"}, "ops", 409, "no target database"),
        ({"kind": "describe"}, "ops", 409, "describer"),
        ({"kind": "reindex", "params": [1]}, "ops", 422, "params"),
    ]
    for body, role, status, words in cases:
        reply = server.request("POST", "/v1/jobs", role, json=body)
        assert reply.status_code == status, (body, role, reply.text)
        assert words in reply.text
    assert server.request("GET", "/v1/jobs", "ops").json()["count"] == 0
    assert server.request("GET", "/v1/jobs/nope", "ops").status_code == 404
    assert server.request("DELETE", "/v1/jobs/nope", "ops").status_code == 404
    assert server.request("GET", "/v1/jobs", "ops", params={"state": "x"}).status_code == 422


def test_cancelling_a_queued_and_a_running_job(make_server, sqlite_target):
    describer = BlockingDescriber()
    server = make_server(target_url=sqlite_target, describer_factory=lambda: describer)
    running = _submit(server, "describe")
    assert describer.entered.wait(10)
    queued = _submit(server, "reindex")
    cancelled = server.request("DELETE", f"/v1/jobs/{queued}", "ops").json()
    assert cancelled["state"] == "cancelled" and cancelled["finished_at"]
    stopping = server.request("DELETE", f"/v1/jobs/{running}", "ops").json()
    assert stopping["state"] == "running" and stopping["cancel_requested"] is True
    describer.release.set()
    job = server.wait_job(running)
    assert job["state"] == "cancelled", job
    assert server.state.store.count(active=None) == 0  # stopped before writing anything
    # at once: the next describer call stops profiling instead of failing entry by entry
    assert not any("describer failed" in line["line"] for line in job["log"]), job["log"]
    again = server.request("DELETE", f"/v1/jobs/{running}", "ops")
    assert again.status_code == 409 and "cancelled" in again.json()["detail"]
    assert server.wait_job(queued)["state"] == "cancelled"  # never ran


def test_after_a_restart_queued_jobs_run_and_interrupted_ones_are_retried_or_failed(
    tmp_path, store_url
):
    settings = make_settings(tmp_path, store_url, jobs={"lease_s": 0.3, "max_attempts": 2})
    # What a crashed server leaves behind: jobs it had claimed, and jobs still queued.
    state = build_state(settings, embedder=None, llms=None)
    queue = state.jobs
    submitter = {"key_id": "k", "role": "ops", "user": "olga", "workspace": None, "groups": []}
    retried = queue.submit("reindex", {}, submitter)  # 2 attempts
    exhausted = JobQueue(state.engine, max_attempts=1).submit("reindex", {}, submitter)
    assert queue.claim("dead-worker", ["reindex"]).id == retried.id
    assert queue.claim("dead-worker", ["reindex"]).id == exhausted.id
    waiting = queue.submit("reindex", {}, submitter)
    time.sleep(0.4)  # the dead worker's lease runs out

    with running_server(state) as server:
        first = server.wait_job(retried.id)
        assert first["state"] == "succeeded" and first["attempts"] == 2
        assert any("queued again (attempt 2/2)" in line["line"] for line in first["log"])
        failed = server.wait_job(exhausted.id)
        assert failed["state"] == "failed" and "no attempts left" in failed["error"]
        assert server.wait_job(waiting.id)["state"] == "succeeded"
        # the dead worker wakes up: its stale claim cannot overwrite anything
        assert not queue.finish(retried.id, "dead-worker", "failed", error="late")
        assert server.wait_job(retried.id)["state"] == "succeeded"
        counts = server.state.jobs.counts_by_state()
        assert counts["succeeded"] == 2 and counts["failed"] == 1


@pytest.mark.parametrize("store_url", ["postgresql"], indirect=True)
def test_postgres_as_store_and_as_target_together(make_server, pg_target):
    server = make_server(target_url=pg_target)
    job = server.wait_job(_submit(server, "profile"))
    assert job["state"] == "succeeded", job
    assert server.state.store.backend == "postgresql"
    assert _tables(server) == ["customers", "orders"]
