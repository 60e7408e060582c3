"""The ``cot`` job on Spider's concert_singer (real SQLite store and target, a scripted
teacher): checked CoT written with the job's report and audit, a second job asking nothing,
a workspace key refused, cancellation inside the teacher's call with the work done kept, and
the background hook after feedback submitting one job at a time."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from agents.learn.cot import checked_cot, cot_experiences
from agents.llm.base import LLMCancelledError, current_cancellation
from indices.embeddings import HashingEmbedder
from kb.profile.profiler import ProfileOptions, profile_database
from server.auth import Permission
from server.job_cot import CotParams, authorize_cot, cot_unavailable, request_cot, run_cot
from server.job_kinds import JobKind, runners_for
from server.state import build_state
from server.worker import JobWorker
from tests.agents.learn.conftest import SPIDER, labeled
from tests.agents.scripted import ScriptedLLM, asked_question
from tests.server.conftest import Server, make_settings, running_server
from ukf import PredicateUKF

DATABASE = "concert_singer"
TARGET = SPIDER / DATABASE / f"{DATABASE}.sqlite"
PAIRS = [
    (
        "How many singers do we have?",
        "SELECT count(*) FROM singer",
        '1. `singer` holds the singers.\n2. "How many" counts them: count(*).',
    ),
    (
        "What are the names of singers from France?",
        "SELECT name FROM singer WHERE country = 'France'",
        "1. Read `name` from `singer`.\n2. \"from France\" is the filter `country` = 'France'.",
    ),
    (
        "What is the average age of all singers?",
        "SELECT avg(age) FROM singer",
        '1. Read the `singer` table.\n2. "average age" is the average of `age`: avg(age).',
    ),
]


class Teacher(ScriptedLLM):
    """Explains each SQL right; call number ``stall_at`` waits for the job's cancellation."""

    def __init__(self, stall_at: int | None = None) -> None:
        answers = {q: explanation for q, _, explanation in PAIRS}

        def reply(messages: list[dict[str, str]], _options: dict[str, Any]) -> str:
            return answers[asked_question(messages)]

        super().__init__([reply], name="teacher")
        self.stall_at, self.stalled = stall_at, threading.Event()

    def chat(self, messages: Any, **options: Any) -> Any:
        if self.stall_at is not None and len(self.calls) == self.stall_at:
            self.calls.append((list(messages), options))
            token = current_cancellation()
            assert token is not None, "the job's cancellation is not current"
            self.stalled.set()
            while not token.wait(0.05):
                pass
            raise LLMCancelledError(f"stopped: {token.reason}")
        return super().chat(messages, **options)


class OneTier:
    def __init__(self, llm: Any) -> None:
        self.llm = llm

    def get(self, name: str | None = None) -> Any:
        if name not in (None, "default"):
            raise KeyError(f"unknown LLM tier {name!r}; configured: ['default']")
        return self.llm


COT_KIND = JobKind(
    "cot",
    "write checked CoT for verified experiences",
    CotParams,
    Permission.JOBS_WRITE,
    run_cot,
    cot_unavailable,
    authorize=authorize_cot,
)


@pytest.fixture()
def concert(tmp_path) -> Iterator[Any]:
    """Start a server on concert_singer (profiled, with labeled experiences) whose one LLM
    tier is ``llm``, the cot kind registered as server/job_kinds.py would, and a worker."""
    if not TARGET.is_file():
        pytest.skip(f"benchmark database {TARGET} not found (set ALMANAC_BENCH_DATA)")
    with ExitStack() as stack:

        def start(llm: Any, *, worker: bool = True) -> Server:
            settings = make_settings(
                tmp_path,
                f"sqlite:///{tmp_path / 'knowledge.db'}",
                target_url=f"sqlite:///{TARGET}",
                target_name=DATABASE,
                jobs={"workers": 0},
            )
            state = build_state(settings, embedder=HashingEmbedder(), llms=None)
            state.llms = OneTier(llm)  # type: ignore[assignment]
            state.job_kinds["cot"] = COT_KIND
            server = stack.enter_context(running_server(state))
            assert state.target is not None
            options = ProfileOptions(progress=False)
            profile_database(state.target, state.store, database_name=DATABASE, options=options)
            state.store.upsert_many([labeled(q, sql, DATABASE) for q, sql, _ in PAIRS])
            if worker:
                stack.callback(start_worker(server).stop)
            return server

        yield start


def start_worker(server: Server) -> JobWorker:
    worker = JobWorker(server.state.jobs, runners_for(server.state), poll_s=0.05)
    worker.start()
    return worker


def _submit(server: Server, params: dict[str, Any], as_: str = "ops") -> str:
    reply = server.request("POST", "/v1/jobs", as_, json={"kind": "cot", "params": params})
    assert reply.status_code == 202, reply.text
    return reply.json()["id"]


def test_a_cot_job_writes_checked_cot_and_a_second_asks_nothing(concert):
    teacher = Teacher()
    server = concert(teacher)
    job = server.wait_job(_submit(server, {}))
    assert job["state"] == "succeeded", job
    report = job["result"]
    assert (report["asked"], report["passed"], report["written"]) == (3, 3, 3)
    assert report["model"] == "teacher" and report["job_id"] == job["id"]
    store = server.state.store
    assert all(checked_cot(e) for e in cot_experiences(store, database=DATABASE))
    audit = server.request("GET", "/v1/audit", "admin", params={"action": "cot"}).json()
    assert audit["items"][0]["job_id"] == job["id"] and audit["items"][0]["entry_count"] == 3
    again = server.wait_job(_submit(server, {}))["result"]
    assert again["asked"] == 0 and again["skipped"] == {"has a passing CoT": 3}
    assert len(teacher.calls) == 3


def test_parameters_and_roles(concert):
    server = concert(Teacher())
    scoped = server.key("ops", user="w", workspace="team-a")
    refused = server.request("POST", "/v1/jobs", scoped, json={"kind": "cot", "params": {}})
    assert refused.status_code == 403 and "global knowledge" in refused.text
    bad = server.request("POST", "/v1/jobs", "ops", json={"kind": "cot", "params": {"limit": 0}})
    assert bad.status_code == 422
    unknown = server.wait_job(_submit(server, {"tier": "nope"}))
    assert unknown["state"] == "failed" and "unknown LLM tier 'nope'" in unknown["error"]
    dry = server.wait_job(_submit(server, {"dry_run": True, "limit": 1}))["result"]
    assert dry["asked"] == 1 and dry["written"] == 0 and dry["skipped"] == {"over the limit": 2}


def test_the_teacher_is_shown_the_knowledge_behind_a_filter_unless_told_not_to(concert):
    teacher = Teacher()
    server = concert(teacher)
    french = PredicateUKF.create("French singers", "country = 'France'", database=DATABASE)
    server.state.store.upsert(french)
    shown = "predicate \"French singers\": country = 'France'"
    bare = server.wait_job(_submit(server, {"dry_run": True}))
    assert bare["state"] == "succeeded", bare
    assert not any(shown in call[0][1]["content"] for call in teacher.calls)
    told = server.wait_job(_submit(server, {"dry_run": True, "with_knowledge": True}))
    assert told["state"] == "succeeded" and told["result"]["passed"] == 3, told
    prompts = [call[0][1]["content"] for call in teacher.calls[3:]]
    assert [shown in p for p in prompts].count(True) == 1  # only the France question's


def test_cancelled_inside_the_teachers_call_keeps_what_was_done(concert):
    teacher = Teacher(stall_at=1)
    server = concert(teacher)
    job_id = _submit(server, {})
    assert teacher.stalled.wait(30), "the teacher was never called twice"
    running = server.request("GET", f"/v1/jobs/{job_id}", "ops").json()
    assert running["state"] == "running", running
    server.request("DELETE", f"/v1/jobs/{job_id}", "ops")
    job = server.wait_job(job_id)
    assert job["state"] == "cancelled", job
    store = server.state.store
    assert sum(bool(checked_cot(e)) for e in cot_experiences(store)) == 1  # the first one
    teacher.stall_at = None
    resumed = server.wait_job(_submit(server, {}))["result"]
    assert resumed["asked"] == 2 and resumed["skipped"] == {"has a passing CoT": 1}
    assert all(checked_cot(e) for e in cot_experiences(store))


def test_the_feedback_hook_submits_one_background_job_at_a_time(concert):
    server = concert(Teacher(), worker=False)
    state = server.state
    first = request_cot(state, DATABASE)
    assert first is not None and first.submitter["user"] == "cot-hook"
    assert request_cot(state, DATABASE) is None  # one is queued: it will see the new ones
    worker = start_worker(server)
    try:
        done = server.wait_job(first.id)
    finally:
        worker.stop()
    assert done["state"] == "succeeded" and done["result"]["passed"] == 3
    assert request_cot(state, DATABASE) is not None  # none queued now: a new one
    state.llms = None
    assert request_cot(state, DATABASE) is None  # no teacher: nothing submitted


# ---------------------------------------------------------------------------------- CLI
def test_the_cli_explains_what_is_missing_and_prints_the_report(tmp_path, capsys):
    import argparse
    import json

    from kb.store import KnowledgeStore
    from server.cli_cot import add_cot_command, run_cot_command

    if not TARGET.is_file():
        pytest.skip(f"benchmark database {TARGET} not found (set ALMANAC_BENCH_DATA)")
    url = f"sqlite:///{tmp_path / 'knowledge.db'}"
    with KnowledgeStore(url) as store:
        store.upsert_many([labeled(q, sql, DATABASE) for q, sql, _ in PAIRS])
    parser = argparse.ArgumentParser()
    add_cot_command(parser.add_subparsers(dest="action"))
    settings = make_settings(tmp_path, url, target_name=DATABASE)
    teacher = Teacher()
    args = parser.parse_args(["cot", "--limit", "2", "--json"])
    assert run_cot_command(args, settings, llm=teacher) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["asked"], report["passed"], report["skipped"]) == (2, 2, {"over the limit": 1})
    assert run_cot_command(parser.parse_args(["cot"]), settings, llm=teacher) == 0
    out = capsys.readouterr().out
    assert (
        out.startswith("CoT by teacher: 1 passed (100% of those asked)") and len(teacher.calls) == 3
    )
    assert run_cot_command(parser.parse_args(["cot", "--limit", "0"]), settings, llm=teacher) == 2
    told = parser.parse_args(["cot", "--with-knowledge", "--retry-failed", "--dry-run"])
    assert told.with_knowledge and run_cot_command(told, settings, llm=teacher) == 0
