"""Background LLM calls (the warm-up's, a job's) give way to questions: the gate's background
turn waits while a question is in progress and ends when its job is cancelled; a question
behind a background call is not refused at the gate's wait; the ``describe`` job's model calls
take background turns, so a question asked while it runs is answered before its next call, and
the job waits behind a long warm-up call instead of failing with ``LLMBusyError``.

Scripted models here, run by the real tiers (``LLMTiers``: retries, slot, metrics), the real
job worker and the real gate."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any

import pytest

from agents.llm.base import Cancellation, LLMCancelledError, cancellation_scope
from indices.embeddings import HashingEmbedder
from server import llm_factory
from server.limits import LLMGate
from server.llm_factory import BackgroundLLM, MeteredLLM
from server.metrics import Metrics
from server.state import build_state
from tests.agents.scripted import ScriptedLLM, sql_reply
from tests.server.conftest import Server, make_settings, running_server
from tests.server.test_ask_api import NORTH, QUESTION, profile_shop
from tests.server.test_readiness import in_thread, wait_until

SQLITE_STORE = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
GATE_WAIT_S = 0.2  # the gate's wait and the tier's slot wait: a background call lasts longer
STOPPED_WITHIN_S = 5.0  # the wait looks at its token every 0.1 s; the machine is loaded


def background_call(gate: LLMGate, token: Cancellation | None = None) -> tuple[Future, Any]:
    """A thread that takes a background turn (with ``token`` current); its future and an
    event set once it holds the turn."""
    entered = threading.Event()

    def run() -> None:
        with cancellation_scope(token), gate.background_turn():
            entered.set()

    return in_thread(run), entered


# --------------------------------------------------------------------------- the gate
def test_a_background_turn_waits_while_a_question_is_in_progress_and_enters_after():
    gate = LLMGate(concurrency=1, queue=4, wait_s=5)
    admission = gate.admit()
    with gate.turn():  # the question at the model
        done, entered = background_call(gate)
        wait_until(lambda: gate.background_waiting == 1, "the background call to wait")
    assert not entered.wait(0.2)  # the question runs its SQL between calls: still its time
    admission.release()
    assert entered.wait(10)
    done.result(10)
    assert (gate.in_flight, gate.background, gate.background_waiting) == (0, 0, 0)


@pytest.mark.parametrize("how", ["current token", "explicit token"])
def test_a_cancelled_token_ends_a_waiting_background_turn(how):
    gate = LLMGate(concurrency=1, queue=4, wait_s=5)
    token = Cancellation()
    admission = gate.admit()
    if how == "current token":
        done, entered = background_call(gate, token)
    else:

        def run() -> None:
            with gate.background_turn(token):
                pass

        done, entered = in_thread(run), threading.Event()
    wait_until(lambda: gate.background_waiting == 1, "the background call to wait")
    cancelled_at = time.monotonic()
    token.cancel("job cancelled by ops")
    with pytest.raises(LLMCancelledError, match="job cancelled by ops"):
        done.result(STOPPED_WITHIN_S)
    assert time.monotonic() - cancelled_at < STOPPED_WITHIN_S
    assert not entered.is_set()
    assert (gate.in_flight, gate.background, gate.background_waiting) == (0, 0, 0)
    admission.release()


def test_a_question_behind_a_background_call_is_not_refused_at_the_gate_wait():
    gate = LLMGate(concurrency=1, queue=4, wait_s=0.05)
    release = threading.Event()

    def long_background_call() -> None:
        with gate.background_turn():
            release.wait(30)

    holder = in_thread(long_background_call)
    wait_until(lambda: gate.background == 1, "the background call")
    admission = gate.admit()

    def question() -> None:
        with gate.turn(until=time.monotonic() + 30):
            pass

    asked = in_thread(question)
    time.sleep(10 * gate.wait_s)
    assert not asked.done()  # ten times the gate's wait, and still waiting
    release.set()
    asked.result(10)
    holder.result(10)
    admission.release()
    assert gate.rejected_timeout == 0 and gate.in_flight == 0


def test_a_background_model_waits_for_questions_and_stops_when_cancelled():
    gate = LLMGate(concurrency=1, queue=4, wait_s=5)
    inner = ScriptedLLM(["described"])
    llm = BackgroundLLM(inner, gate)
    token = Cancellation()
    admission = gate.admit()

    def call() -> str:
        with cancellation_scope(token):
            return llm.chat([{"role": "user", "content": "describe"}]).text

    waiting = in_thread(call)
    wait_until(lambda: gate.background_waiting == 1, "the call to wait for the question")
    token.cancel("stop")
    with pytest.raises(LLMCancelledError):
        waiting.result(STOPPED_WITHIN_S)
    assert inner.calls == []  # cancelled before it reached the model
    admission.release()
    assert llm.chat([{"role": "user", "content": "describe"}]).text == "described"
    assert len(inner.calls) == 1 and gate.in_flight == 0


class TokenHoldingLLM:
    """A model whose call holds it until the current token is cancelled (as llama.cpp stops
    mid-prefill or between tokens); later calls answer at once."""

    def __init__(self, hold: int = 1) -> None:
        self.name, self.hold, self.calls = "holding", hold, 0
        self.started = threading.Event()
        self.stopped: list[str] = []

    def chat(self, messages: Any, **options: Any) -> Any:
        from agents.llm.base import ChatResult, Completion, current_cancellation

        self.calls += 1
        if self.calls <= self.hold:
            token = current_cancellation()
            assert token is not None, "a background call runs under a token"
            self.started.set()
            if token.wait(60):
                self.stopped.append(token.reason)
                raise LLMCancelledError(f"holding: {token.reason}")
        return ChatResult([Completion("described", "stop")], model=self.name)


def test_a_question_preempts_a_job_call_under_way_which_runs_again_after_it():
    gate = LLMGate(concurrency=1, queue=4, wait_s=5)
    inner = TokenHoldingLLM()
    llm = BackgroundLLM(inner, gate)
    job = in_thread(lambda: llm.chat([{"role": "user", "content": "describe"}]).text)
    assert inner.started.wait(STOPPED_WITHIN_S)
    admission = gate.admit()  # a question arrives while the job's call holds the model
    admission.wait_for_model()  # a slot comes free at once: the call was stopped
    assert inner.stopped == ["preempted by a question"] and gate.preempted == 1
    with gate.turn():
        assert not job.done()  # the job waits for the question to be answered
    admission.release()
    assert job.result(STOPPED_WITHIN_S) == "described"
    assert inner.calls == 2 and llm.preempted == 1 and gate.in_flight == 0


def test_a_cancelled_job_is_not_run_again_and_the_warm_up_is_not_preempted():
    gate = LLMGate(concurrency=1, queue=4, wait_s=5)
    inner = TokenHoldingLLM()
    llm = BackgroundLLM(inner, gate)
    token = Cancellation()

    def call() -> str:
        with cancellation_scope(token):
            return llm.chat([{"role": "user", "content": "describe"}]).text

    job = in_thread(call)
    assert inner.started.wait(STOPPED_WITHIN_S)
    token.cancel("job 3 was cancelled")
    with pytest.raises(LLMCancelledError, match="job 3 was cancelled"):
        job.result(STOPPED_WITHIN_S)
    assert inner.calls == 1 and llm.preempted == 0
    with gate.warm_up_turn() as warm_token:
        assert warm_token is None  # nothing a question could cancel
        admission = gate.admit()
        assert gate.preempted == 0
    admission.release()


def test_a_cancelled_call_is_counted_as_cancelled_not_as_an_error():
    metrics = Metrics()
    llm = MeteredLLM(ScriptedLLM([LLMCancelledError("stopped"), "ok"]), "default", metrics)
    with pytest.raises(LLMCancelledError):
        llm.chat([{"role": "user", "content": "hello"}])
    llm.chat([{"role": "user", "content": "hello"}])
    rendered = metrics.render()
    assert 'almanac_llm_calls_total{tier="default",outcome="cancelled"} 1' in rendered
    assert 'outcome="error"' not in rendered


# ------------------------------------------------------------------ the describe job
def describe_reply(prompt: str) -> str:
    """A usable answer to any describe prompt: every listed column and value described."""
    columns = re.findall(r"^- (\S+) \(", prompt, re.M)
    listed = prompt.split("Values:", 1)[1] if "Values:" in prompt else ""
    values = re.findall(r"^- (.+)$", listed, re.M)
    return json.dumps(
        {
            "description": "scripted description",
            "synonyms": ["scripted synonym"],
            "columns": [
                {"name": c, "description": f"the {c} column", "synonyms": [f"{c} field"]}
                for c in columns
            ],
            "values": [
                {"value": v, "description": f"the value {v}", "synonyms": [f"{v} value"]}
                for v in values
            ],
        }
    )


class SharedModel:
    """The one scripted model questions, the warm-up and the describe job share: it notes
    each call's kind in ``order``; the first describe call and the warm-up's prefill hold the
    model until released."""

    def __init__(self) -> None:
        self.order: list[str] = []
        self.describing = threading.Event()
        self.describe_may_go = threading.Event()
        self.prefill_may_end = threading.Event()
        self.llm = ScriptedLLM([self.reply], name="shared")

    def reply(self, messages: list[dict[str, str]], options: dict[str, Any]) -> str:
        prompt = messages[-1]["content"]
        if options.get("max_tokens") == 1:
            self.order.append("warm-up")
            assert self.prefill_may_end.wait(30)
            return "(warming token)"
        if "Describe" in prompt:
            self.order.append("describe")
            if not self.describing.is_set():
                self.describing.set()
                assert self.describe_may_go.wait(30)
            return describe_reply(prompt)
        self.order.append("question")
        return sql_reply(NORTH)


@contextmanager
def describing_server(
    tmp_path, store_url: str, target_url: str, model: SharedModel, monkeypatch, **settings: Any
) -> Iterator[Server]:
    """A started server over the profiled target "shop" whose one tier (the real
    ``LLMTiers``, its slot waiting ``GATE_WAIT_S`` at most) runs ``model``, and whose describer
    is the configured one (the LLM describer over that tier)."""
    profile_shop(store_url, target_url)
    monkeypatch.setattr(llm_factory, "build_backend", lambda tier, data_dir: model.llm)
    state = build_state(
        make_settings(
            tmp_path,
            store_url,
            target_url=target_url,
            target_name="shop",
            llm_tiers=[{"name": "default", "max_wait_s": GATE_WAIT_S, "retries": 0}],
            limits={"llm_queue_wait_s": GATE_WAIT_S},
            **settings,
        ),
        embedder=HashingEmbedder(),
    )
    with running_server(state) as server:
        yield server


def submit_describe(server: Server) -> str:
    reply = server.request("POST", "/v1/jobs", "ops", json={"kind": "describe", "params": {}})
    assert reply.status_code == 202, reply.text
    return str(reply.json()["id"])


def described_columns(server: Server) -> dict[str, str]:
    return {
        column.name: column.description
        for column in server.state.store.iterate(type="column")
        if column.description
    }


def assert_no_busy_call(server: Server) -> None:
    rendered = server.state.metrics.render()
    assert 'outcome="busy"' not in rendered and 'outcome="error"' not in rendered, rendered


@SQLITE_STORE
def test_a_question_asked_while_a_describe_job_runs_is_answered_before_its_next_call(
    tmp_path, store_url, sqlite_target, monkeypatch
):
    model = SharedModel()
    with describing_server(tmp_path, store_url, sqlite_target, model, monkeypatch) as server:
        job_id = submit_describe(server)
        assert model.describing.wait(30), "the describe job never called the model"
        asked = in_thread(
            lambda: server.request("POST", "/v1/ask", "analyst", json={"question": QUESTION})
        )
        gate = server.state.llm_gate
        wait_until(lambda: gate.waiting == 1, "the question to wait for the model")
        time.sleep(3 * GATE_WAIT_S)
        assert not asked.done()  # behind the job's call, past the gate's wait: not refused
        model.describe_may_go.set()
        reply = asked.result(30)
        assert reply.status_code == 200, reply.text
        assert sorted(reply.json()["rows"]) == [["Ada"], ["Cy"]]
        job = server.wait_job(job_id, timeout=60)
        assert job["state"] == "succeeded", job
        assert_no_busy_call(server)
        assert gate.rejected_timeout == 0
        assert described_columns(server)["region"] == "the region column"
    # the job's first call, then every call of the question, then the rest of the job
    questions = model.order.count("question")
    assert questions >= 1
    assert model.order[: 1 + questions] == ["describe"] + ["question"] * questions, model.order
    assert set(model.order[1 + questions :]) == {"describe"}, model.order


@SQLITE_STORE
def test_a_describe_job_waits_behind_a_long_warm_up_call_instead_of_failing_busy(
    tmp_path, store_url, sqlite_target, monkeypatch
):
    model = SharedModel()
    model.describing.set()  # no describe call is held: only the warm-up's prefill
    model.describe_may_go.set()
    with describing_server(
        tmp_path, store_url, sqlite_target, model, monkeypatch, warm_on_start=True
    ) as server:
        gate = server.state.llm_gate
        wait_until(lambda: gate.warming == 1, "the prefill to hold the model")
        job_id = submit_describe(server)
        wait_until(lambda: gate.background_waiting == 1, "the describe job to wait its turn")
        time.sleep(3 * GATE_WAIT_S)  # past the tier's slot wait and the gate's
        assert server.request("GET", f"/v1/jobs/{job_id}", "ops").json()["state"] == "running"
        model.prefill_may_end.set()
        job = server.wait_job(job_id, timeout=60)
        assert job["state"] == "succeeded", job
        assert_no_busy_call(server)
        assert described_columns(server)["region"] == "the region column"
    assert model.order[0] == "warm-up" and "describe" in model.order, model.order
