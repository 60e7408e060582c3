"""The ``synthesize`` job over HTTP on concert_singer: pairs stored with the job's id and
audited, a run again storing nothing twice, who may submit it, its parameters, and a cancel
inside an LLM call (the kind is registered here as ``server.job_kinds`` will register it)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from agents.learn.synth import synthetic_experiences
from agents.llm.base import LLMCancelledError, current_cancellation
from indices.embeddings import HashingEmbedder
from server.auth import Permission
from server.job_kinds import JobKind
from server.job_synthesize import (
    SynthesizeParams,
    authorize_synthesize,
    run_synthesize,
    unavailable,
)
from server.state import build_state
from tests.agents.learn.conftest import SPIDER, labeled
from tests.agents.learn.test_gate import knowledge_of
from tests.agents.scripted import ScriptedLLM, sql_reply
from tests.server.conftest import Server, make_settings, running_server
from tests.server.test_job_mine import OneTier, _submit

DB = "concert_singer"
PATH = SPIDER / DB / f"{DB}.sqlite"
NAMES = ("What are the names of the singers from France?",
         "SELECT name FROM singer WHERE country = 'France'")  # fmt: skip
KIND = JobKind(
    "synthesize",
    "synthesize verified question-SQL pairs from verified experiences",
    SynthesizeParams,
    Permission.JOBS_WRITE,
    run_synthesize,
    unavailable,
    authorize_synthesize,
)


def reply(messages: list[Any], options: dict[str, Any]) -> str:
    """The question writer (asked with a JSON schema): a question carrying the new SQL; the
    chain: the SQL its question carries (a chain that reads every question right)."""
    if options.get("json_schema"):
        sql = re.search(r"New SQL: (.*)", messages[-1]["content"]).group(1)
        return json.dumps(
            {"question": f"Which rows does this give: {sql.replace('SELECT', 'pick')}"}
        )
    question, _ = knowledge_of(messages)
    return sql_reply(question.split(": ", 1)[-1].replace("pick", "SELECT"))


@pytest.fixture()
def concert(tmp_path) -> Iterator[Server]:
    if not PATH.is_file():
        pytest.skip(f"benchmark database {PATH} not found (set ALMANAC_BENCH_DATA)")
    settings = make_settings(
        tmp_path,
        f"sqlite:///{tmp_path / 'knowledge.db'}",
        target_url=f"sqlite:///{PATH}",
        target_name=DB,
    )
    state = build_state(settings, embedder=HashingEmbedder(), llms=None)
    state.job_kinds = {**state.job_kinds, "synthesize": KIND}
    with running_server(state) as server:
        assert server.wait_job(_submit(server, {}, kind="profile"))["state"] == "succeeded"
        state.store.upsert(labeled(*NAMES, database=DB))
        state.llms = OneTier(ScriptedLLM([reply]))  # type: ignore[assignment]
        yield server


def test_a_synthesize_job_stores_audited_pairs_once(concert):
    job = concert.wait_job(_submit(concert, {"per_source": 4}, kind="synthesize"), timeout=120)
    assert job["state"] == "succeeded", job
    result = job["result"]
    totals = result["totals"]
    assert result["database"] == DB and result["sources"] == 1
    assert totals["generated"] == 4 and totals["stored"] == result["stored_count"] > 0
    stored = synthetic_experiences(concert.state.store, database=DB)
    assert sorted(e.id for e in stored) == sorted(result["stored_ids"])
    assert {e.content_resources["synthetic"]["job"] for e in stored} == {job["id"]}
    assert any(line["line"].startswith("synthesis: 1 sources") for line in job["log"])
    audit = concert.request("GET", "/v1/audit", "admin", params={"action": "synthesize"}).json()
    assert audit["items"][0]["job_id"] == job["id"]
    assert audit["items"][0]["entry_count"] == totals["stored"]

    again = concert.wait_job(_submit(concert, {"per_source": 4}, kind="synthesize"))
    assert again["state"] == "succeeded", again
    assert again["result"]["totals"]["known"] == 4 and again["result"]["totals"]["stored"] == 0
    assert len(synthetic_experiences(concert.state.store)) == len(stored)


def test_parameters_and_submitters_are_checked(concert):
    for params in ({"transforms": ["shuffle"]}, {"per_source": 0}, {"limit": -1}, {"x": 1}):
        reply = concert.request(
            "POST", "/v1/jobs", "ops", json={"kind": "synthesize", "params": params}
        )
        assert reply.status_code == 422, (params, reply.text)
    scoped = concert.key("ops", user="wanda", workspace="sales")
    refused = concert.request("POST", "/v1/jobs", scoped, json={"kind": "synthesize", "params": {}})
    assert refused.status_code == 403 and "global knowledge" in refused.text
    assert (
        concert.request(
            "POST", "/v1/jobs", "analyst", json={"kind": "synthesize", "params": {}}
        ).status_code
        == 403
    )
    llms, concert.state.llms = concert.state.llms, None
    no_llm = concert.request("POST", "/v1/jobs", "ops", json={"kind": "synthesize", "params": {}})
    assert no_llm.status_code == 409 and "no LLM is configured" in no_llm.text
    concert.state.llms = llms
    other = concert.wait_job(_submit(concert, {"database_name": "world_1"}, kind="synthesize"))
    assert other["state"] == "failed" and "is not the target" in other["error"]
    limited = concert.wait_job(
        _submit(concert, {"limit": 1, "transforms": ["vary"]}, kind="synthesize")
    )
    result = limited["result"]
    assert result["stored_count"] == 1 and set(result["by_transform"]) == {"vary"}


def test_a_job_cancelled_inside_an_llm_call_keeps_its_pairs_and_resumes(concert):
    stalled, errors, calls = threading.Event(), [], []

    def stalling(messages: list[Any], options: dict[str, Any]) -> str:
        calls.append(1)
        if options.get("json_schema") and len(calls) == 3:  # the second question written
            stalled.set()
            token = current_cancellation()
            assert token is not None, "the job's cancellation is not current"
            while not token.wait(0.05):
                pass
            errors.append(token.reason)
            raise LLMCancelledError(f"stopped: {token.reason}")
        return reply(messages, options)

    concert.state.llms = OneTier(ScriptedLLM([stalling]))  # type: ignore[assignment]
    job_id = _submit(concert, {"per_source": 4, "transforms": ["filter"]}, kind="synthesize")
    assert stalled.wait(60), "the job never asked for a second question"
    concert.request("DELETE", f"/v1/jobs/{job_id}", "ops")
    job = concert.wait_job(job_id)
    assert job["state"] == "cancelled", job
    assert errors == [f"job {job_id} was cancelled"]
    kept = synthetic_experiences(concert.state.store)
    assert len(kept) == 1  # the first pair passed its back-check before the stop
    audit = concert.request("GET", "/v1/audit", "admin", params={"action": "synthesize"}).json()
    assert audit["items"][0]["job_id"] == job_id and audit["items"][0]["entry_count"] == 1

    concert.state.llms = OneTier(ScriptedLLM([reply]))  # type: ignore[assignment]
    done = concert.wait_job(
        _submit(concert, {"per_source": 4, "transforms": ["filter"]}, kind="synthesize")
    )
    assert done["state"] == "succeeded", done
    totals = done["result"]["totals"]
    assert totals["known"] == 1 and totals["stored"] == 3
    sqls = [e.sql for e in synthetic_experiences(concert.state.store)]
    assert len(sqls) == len(set(sqls)) == 4
