"""The ``mine`` job over HTTP on GeoQuery (real SQLite store and target): candidates with the
job id, the report as the job's result, progress and cancellation (inside the pairer's LLM
call), parameters and roles refused, a workspace key's scope, and the gate (a helpful
candidate activated, a misleading one rejected, cancellation inside it). A worker that died
mid-job: ``test_job_mine_resume.py``; the real small model: ``test_job_mine_real_model.py``."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agents.learn.mine import is_candidate
from agents.learn.mine.labeled import MiningReport
from agents.llm.base import LLMCancelledError, current_cancellation
from bench.datasets import load_dataset
from bench.mine_throughput import experiences_of
from server.job_mine import LIST_LIMIT, job_result
from tests.agents.learn.conftest import GEOQUERY, labeled
from tests.agents.learn.test_gate import GOLD, model_reading_knowledge
from tests.agents.scripted import ScriptedLLM, sql_reply
from tests.server.conftest import Server
from ukf import BaseUKF, ExperienceUKF

DATABASE = "geography"
COUNT = 40


@pytest.fixture()
def store_url(tmp_path) -> str:
    """SQLite alone: what is tested here does not depend on the store's backend."""
    return f"sqlite:///{tmp_path / 'knowledge.db'}"


@pytest.fixture(scope="module")
def experiences() -> list[ExperienceUKF]:
    if not GEOQUERY.is_file():
        pytest.skip(f"benchmark database {GEOQUERY} not found (set ALMANAC_BENCH_DATA)")
    examples = [e for e in load_dataset("geoquery").examples if e.split == "train"][:COUNT]
    return experiences_of(examples)


@pytest.fixture()
def geo(make_server, experiences) -> Server:
    """A server whose target is GeoQuery, profiled by a job, with labeled experiences."""
    server = make_server(target_url=f"sqlite:///{GEOQUERY}", target_name=DATABASE)
    profiled = server.wait_job(_submit(server, {}, kind="profile"))
    assert profiled["state"] == "succeeded", profiled
    server.state.store.upsert_many(experiences)
    return server


def _submit(server: Server, params: dict[str, Any], as_: str = "ops", kind: str = "mine") -> str:
    reply = server.request("POST", "/v1/jobs", as_, json={"kind": kind, "params": params})
    assert reply.status_code == 202, reply.text
    return reply.json()["id"]


def _mined(store: Any) -> list[BaseUKF]:
    return [e for e in store.iterate(active=None) if "mining" in e.metadata]


def test_a_mine_job_writes_candidates_with_its_id_and_reports_them(geo):
    job = geo.wait_job(_submit(geo, {}))
    assert job["state"] == "succeeded", job
    assert job["progress"] == 1.0 and job["message"] == "succeeded"
    report = job["result"]
    assert report["experiences"] == COUNT and report["database"] == DATABASE
    assert report["mined_experiences"] + len(report["skipped"]) == COUNT
    assert sum(report["mined"].values()) > 0 and report["merge"]["inserted"] > 0
    assert report["scope"] == {"workspace": None, "left_out": 0}
    mined = _mined(geo.state.store)
    assert sorted(report["candidate_ids"]) == sorted(e.id for e in mined)
    assert report["candidate_ids_count"] == len(mined) == report["merge"]["inserted"]
    for entry in mined:
        assert is_candidate(entry) and entry.inactive_mark
        assert entry.metadata["mining"]["job_id"] == job["id"]
    assert any(line["line"].startswith("labeled: mined ") for line in job["log"])
    audit = geo.request("GET", "/v1/audit", "admin", params={"action": "mine"}).json()
    (record,) = audit["items"]
    assert record["job_id"] == job["id"] and record["entry_count"] == len(mined)
    assert record["user"] == "ops" and sorted(record["ukf_ids"]) == sorted(e.id for e in mined)
    assert record["detail"]["merge"] == report["merge"]

    again = geo.wait_job(_submit(geo, {}))  # re-mining the same log inserts nothing
    assert again["state"] == "succeeded", again
    assert "inserted" not in again["result"]["merge"] and again["result"]["candidate_ids"] == []
    assert len(_mined(geo.state.store)) == len(mined)
    shown = geo.request("GET", f"/v1/jobs/{again['id']}", "ml").json()
    assert shown["result"] == again["result"]


def test_selection_dry_run_and_rerun(geo):
    store = geo.state.store
    broken = labeled(
        "what is the nickname of texas",
        "SELECT state_nickname FROM state WHERE state_name = 'texas'",
        database=DATABASE,
    )
    version = store.version
    store.upsert_many([broken])
    later = geo.wait_job(_submit(geo, {"since_version": version, "rerun": True}))
    assert later["result"]["experiences"] == 1, later
    (skipped,) = later["result"]["skipped"]
    assert skipped["experience_id"] == broken.id
    assert skipped["reason"].startswith("SQL no longer runs")

    before = (datetime.now(UTC) - timedelta(days=1)).isoformat()
    window = geo.wait_job(_submit(geo, {"until": before}))
    assert window["result"]["experiences"] == 0, window
    other = geo.wait_job(_submit(geo, {"database_name": "world_1"}))
    assert other["result"]["experiences"] == 0 and other["result"]["database"] == "world_1"

    dry = geo.wait_job(_submit(geo, {"dry_run": True, "since": before}))
    assert dry["result"]["dry_run"] is True and dry["result"]["merge"]["inserted"] > 0
    assert dry["result"]["experiences"] == COUNT + 1
    assert _mined(store) == [] and dry["result"]["store_version"] is None
    audit = geo.request("GET", "/v1/audit", "admin", params={"action": "mine"}).json()
    assert audit["items"] == []


def test_a_workspace_key_mines_its_workspace_only(geo, experiences):
    sales = [e.clone(workspace="sales") for e in experiences[:10]]
    geo.state.store.upsert_many(sales)
    key = geo.key("ops", user="sam", workspace="sales")
    job = geo.wait_job(_submit(geo, {}, as_=key), as_=key)
    assert job["state"] == "succeeded", job
    assert job["result"]["experiences"] == 10
    assert job["result"]["scope"] == {"workspace": "sales", "left_out": COUNT}
    mined = _mined(geo.state.store)
    assert mined and {e.workspace for e in mined} == {"sales"}


def test_template_support_sets_which_groups_make_query_templates(geo):
    """By default two labeled questions sharing a slotted SQL make a template; a support no
    group reaches makes none, and 0 turns templates off."""
    counts = {}
    for support in (None, 1000, 0):
        params = {"dry_run": True} | ({} if support is None else {"template_support": support})
        job = geo.wait_job(_submit(geo, params))
        assert job["state"] == "succeeded", job
        counts[support] = job["result"]["mined"].get("template", 0)
        assert job["result"]["mined_experiences"] > 0
    assert counts[None] > 0 and counts[1000] == 0 and counts[0] == 0


def test_bad_parameters_and_roles_are_refused(geo):
    cases = [
        ({"mode": "votes"}, "ops", 422, "labeled"),
        ({"since_version": -1}, "ops", 422, "since_version"),
        ({"template_support": -1}, "ops", 422, "template_support"),
        ({"since": "2026-01-02", "until": "2026-01-01"}, "ops", 422, "must be before"),
        ({"limit": 3}, "ops", 422, "Extra inputs"),
        ({}, "analyst", 403, "lacks the 'jobs:write' permission"),
        ({}, "ml", 403, "lacks the 'jobs:write' permission"),
    ]
    for params, role, status, words in cases:
        reply = geo.request("POST", "/v1/jobs", role, json={"kind": "mine", "params": params})
        assert reply.status_code == status, (params, role, reply.text)
        assert words in reply.text, reply.text
    assert geo.request("GET", "/v1/jobs", "ops", params={"kind": "mine"}).json()["count"] == 0
    no_llm = geo.wait_job(_submit(geo, {"llm_pairer": True}))
    assert no_llm["state"] == "failed" and "no LLM is configured" in no_llm["error"]
    for mode in ("unlabeled", "both"):
        no_vote = geo.wait_job(_submit(geo, {"mode": mode}))
        assert no_vote["state"] == "failed", no_vote
        assert "needs the server's target database and an LLM tier" in no_vote["error"]
    assert _mined(geo.state.store) == []


class StallingLLM(ScriptedLLM):
    """Pairs nothing; its call number ``stall_at`` waits until the job's token is cancelled."""

    def __init__(self, stall_at: int) -> None:
        super().__init__(['{"pairs": []}'])
        self.stall_at, self.stalled, self.errors = stall_at, threading.Event(), []

    def chat(self, messages: Any, **options: Any) -> Any:
        if len(self.calls) == self.stall_at:
            self.calls.append((list(messages), options))
            token = current_cancellation()
            assert token is not None, "the job's cancellation is not current"
            self.stalled.set()
            while not token.wait(0.05):
                pass
            self.errors.append(token.reason)
            raise LLMCancelledError(f"pairing stopped: {token.reason}")
        return super().chat(messages, **options)


class OneTier:
    def __init__(self, llm: Any) -> None:
        self.llm = llm

    def get(self, name: str | None = None) -> Any:
        return self.llm


def test_progress_and_cancel_inside_the_pairers_llm_call(geo):
    llm = StallingLLM(stall_at=2)
    geo.state.llms = OneTier(llm)  # type: ignore[assignment]
    job_id = _submit(geo, {"llm_pairer": True})
    assert llm.stalled.wait(30), "the pairer never called the model"
    running = geo.request("GET", f"/v1/jobs/{job_id}", "ops").json()
    assert running["state"] == "running", running
    assert 0.05 <= running["progress"] < 0.9
    assert running["message"].startswith(("mined ", "mining "))

    stopping = geo.request("DELETE", f"/v1/jobs/{job_id}", "ops").json()
    assert stopping["cancel_requested"] is True
    job = geo.wait_job(job_id)
    assert job["state"] == "cancelled", job
    assert llm.errors == [f"job {job_id} was cancelled"]
    assert len(llm.calls) == 3  # no call after the stalled one
    assert _mined(geo.state.store) == []  # stopped before the merge: nothing half-written
    done = geo.wait_job(_submit(geo, {}))  # the rest is consistent: a new run mines it all
    assert done["state"] == "succeeded" and done["result"]["merge"]["inserted"] > 0


# -------------------------------------------------------------------------------- gate
@pytest.fixture()
def gated(make_server) -> tuple[Server, int]:
    """GeoQuery profiled, the held questions (verified, written first) and, after store
    version ``since``, the sources of a helpful (NC) and a misleading (seattle) candidate."""
    if not GEOQUERY.is_file():
        pytest.skip(f"benchmark database {GEOQUERY} not found (set ALMANAC_BENCH_DATA)")
    server = make_server(target_url=f"sqlite:///{GEOQUERY}", target_name=DATABASE)
    assert server.wait_job(_submit(server, {}, kind="profile"))["state"] == "succeeded"
    store = server.state.store
    store.upsert_many([labeled(q, sql, DATABASE, verified=True) for q, sql in GOLD.items()])
    since = store.version
    store.upsert_many(
        [
            labeled(
                "how many people live in NC",
                "SELECT s.population FROM state AS s WHERE s.state_name = 'north carolina'",
                DATABASE,
                verified=True,
            ),
            labeled(
                "how many people live in seattle",
                "SELECT population FROM city WHERE city_name = 'seattle'",
                DATABASE,
                verified=True,
            ),
            labeled(  # two say seattle means it: the held Miami question naming it does not
                "what is the population of seattle",
                "SELECT population FROM city WHERE city_name = 'seattle'",
                DATABASE,
                verified=True,
            ),
        ]
    )
    return server, since


def _named(store: Any, name: str) -> BaseUKF:
    (entry,) = [e for e in _mined(store) if e.name == name]
    return entry


def test_the_gate_activates_a_helpful_candidate_and_rejects_a_misleading_one(gated):
    server, since = gated
    llm = ScriptedLLM([model_reading_knowledge])
    server.state.llms = OneTier(llm)  # type: ignore[assignment]
    params = {"since_version": since, "gate": True, "gate_batch": 1}
    job = server.wait_job(_submit(server, params), timeout=120)
    assert job["state"] == "succeeded", job
    assert job["progress"] == 1.0
    gate = job["result"]["gate"]
    store = server.state.store
    nc, seattle = _named(store, "NC"), _named(store, "seattle")
    assert gate["held"] == 3 and gate["excluded"] == [] and not gate["cancelled"]
    assert nc.id in gate["activated"] and seattle.id in gate["rejected"]
    assert gate["baseline_ex"] == round(2 / 3, 4) and gate["final_ex"] == 1.0
    assert not nc.inactive_mark and nc.metadata["mining"]["status"] == "active"
    assert seattle.inactive_mark and seattle.metadata["mining"]["status"] == "rejected"
    seattle_gate = seattle.metadata["mining"]["gate"]
    assert seattle_gate["ex_with"] < seattle_gate["ex_without"] and seattle_gate["broken"]
    assert any(line["line"].startswith("gate: ") for line in job["log"])
    assert llm.calls  # the questions were asked through the server's tier

    audit = server.request("GET", "/v1/audit", "admin", params={"action": "mine.gate"}).json()
    rows = {r["detail"]["decision"]: r for r in audit["items"]}
    assert set(rows) == {"activated", "rejected"}
    assert sorted(rows["activated"]["ukf_ids"]) == sorted(gate["activated"])
    assert sorted(rows["rejected"]["ukf_ids"]) == sorted(gate["rejected"])
    assert {r["job_id"] for r in rows.values()} == {job["id"]}
    assert rows["activated"]["detail"]["baseline_ex"] == gate["baseline_ex"]


def test_cancelled_during_the_gate_the_job_ends_cancelled_with_candidates_left(gated):
    server, since = gated
    asked, cancelled = threading.Event(), threading.Event()

    def stalling(messages: Any, options: Any) -> str:
        # the tier draws in a pool thread, where the job's token is not current: the model
        # waits for the test's cancel request (DELETE cancels the local worker's token)
        asked.set()
        assert cancelled.wait(30), "the test never cancelled"
        return model_reading_knowledge(messages, options)  # answers; the gate stops next

    server.state.llms = OneTier(ScriptedLLM([stalling]))  # type: ignore[assignment]
    job_id = _submit(server, {"since_version": since, "gate": True})
    assert asked.wait(60), "the gate never asked the model"
    running = server.request("GET", f"/v1/jobs/{job_id}", "ops").json()
    assert running["state"] == "running", running
    assert server.request("DELETE", f"/v1/jobs/{job_id}", "ops").json()["cancel_requested"]
    cancelled.set()
    job = server.wait_job(job_id, timeout=60)
    assert job["state"] == "cancelled", job
    mined = _mined(server.state.store)
    assert mined and all(is_candidate(e) and e.inactive_mark for e in mined)
    assert all("gate" not in e.metadata["mining"] for e in mined)
    audit = server.request("GET", "/v1/audit", "admin", params={"action": "mine.gate"}).json()
    assert audit["items"] == []
    mine_audit = server.request("GET", "/v1/audit", "admin", params={"action": "mine"}).json()
    assert [r["job_id"] for r in mine_audit["items"]] == [job_id]  # the merge is audited


def test_gate_parameters(geo):
    for params, words in [({"gate_held": 0}, "gate_held"), ({"gate_batch": 0}, "gate_batch")]:
        reply = geo.request("POST", "/v1/jobs", "ops", json={"kind": "mine", "params": params})
        assert reply.status_code == 422 and words in reply.text, reply.text
    no_llm = geo.wait_job(_submit(geo, {"gate": True}))
    assert no_llm["state"] == "failed" and "gate: it needs" in no_llm["error"], no_llm
    assert _mined(geo.state.store) == []  # refused before mining
    geo.state.llms = OneTier(ScriptedLLM([sql_reply("SELECT 1")]))  # type: ignore[assignment]
    other = geo.wait_job(_submit(geo, {"gate": True, "database_name": "world_1"}))
    assert other["state"] == "failed" and "cannot be measured" in other["error"], other
    dry = geo.wait_job(_submit(geo, {"gate": True, "dry_run": True}))  # dry: no gate
    assert dry["state"] == "succeeded" and "gate" not in dry["result"], dry


def test_long_lists_in_the_result_are_cut_and_counted() -> None:
    report = MiningReport("job-1", candidate_ids=[f"c{i}" for i in range(LIST_LIMIT + 7)])
    result = job_result(report, database=DATABASE, workspace=None, left_out=0)
    assert result["candidate_ids"] == [f"c{i}" for i in range(LIST_LIMIT)]
    assert result["candidate_ids_count"] == LIST_LIMIT + 7
    assert result["truncated"] == {"candidate_ids": 7} and result["skipped_count"] == 0
