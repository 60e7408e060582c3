"""Readiness: the warm-up's components and states, the gate's warm-up priority, questions that
arrive during the warm-up (they wait and are answered), /v1/health per component. Scripted
models here; the real model in ``test_readiness_e2e.py``; the lines ``almanac serve`` prints
in ``test_serve_lines.py``."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import pytest
from fastapi.testclient import TestClient

from indices.embeddings import HashingEmbedder
from server.app import create_app
from server.limits import GateTimeoutError, LLMGate
from server.readiness import INDICES, PREFILL, Phase, Readiness, model_component, overall_of
from server.state import AppState, build_state
from tests.agents.scripted import ScriptedLLM, sql_reply
from tests.server.conftest import make_settings
from tests.server.test_ask_api import NORTH, QUESTION, Tiers, profile_shop

SQLITE_STORE = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
DEFAULT = model_component("default")


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def model(prefill: Callable[[Any, Any], str] | None = None) -> ScriptedLLM:
    """A model that answers the warm-up's prefill (one token; ``prefill`` when given) and
    writes the SQL for every question."""

    def reply(messages: Any, options: dict[str, Any]) -> str:
        if options.get("max_tokens") == 1:
            return prefill(messages, options) if prefill else "(warming token)"
        return sql_reply(NORTH)

    return ScriptedLLM([reply])


def in_thread(call: Callable[[], Any]) -> Future:
    pool = ThreadPoolExecutor(1)
    future = pool.submit(call)
    pool.shutdown(wait=False)
    return future


# ------------------------------------------------------------------------- the states
def test_the_overall_status_follows_the_components():
    readiness = Readiness()
    readiness.add(INDICES)
    readiness.add(DEFAULT)
    readiness.add(PREFILL)
    assert readiness.overall() == "starting"
    readiness.mark(INDICES, Phase.WARMING)
    readiness.mark(DEFAULT, Phase.WARMING)
    assert readiness.overall() == "starting"  # no question can be answered without indices
    readiness.mark(INDICES, Phase.READY)
    assert readiness.overall() == "warming"
    readiness.mark(DEFAULT, Phase.READY)
    readiness.mark(PREFILL, Phase.WARMING)
    assert readiness.overall() == "warming"
    readiness.mark(PREFILL, Phase.FAILED, "model gone")  # a failed prefill only costs speed
    assert readiness.overall() == "ready"
    readiness.mark(DEFAULT, Phase.FAILED, "no such file")
    assert readiness.overall() == "degraded"
    described = readiness.describe()
    assert list(described) == [INDICES, DEFAULT, PREFILL]
    assert described[DEFAULT] == {
        "state": "failed",
        "after_s": described[DEFAULT]["after_s"],
        "detail": "no such file",
    }
    assert overall_of([]) == "ready"


def test_waiting_for_components_ends_when_they_settle_or_at_the_limit():
    readiness = Readiness()
    readiness.add(DEFAULT)
    assert readiness.wait_settled([DEFAULT, "model:unregistered"], time.monotonic()) == [DEFAULT]
    seen = readiness.wait_changed(0)
    threading.Timer(0.05, lambda: readiness.mark(DEFAULT, Phase.READY)).start()
    assert readiness.wait_settled([DEFAULT], time.monotonic() + 10) == []
    assert readiness.wait_changed(seen, timeout=10) > seen
    readiness.add(DEFAULT)  # registering again keeps the state
    assert readiness.get(DEFAULT).phase is Phase.READY


# ----------------------------------------------------------------------- the gate
def test_a_warm_up_call_waits_until_no_question_is_in_progress():
    gate = LLMGate(concurrency=1, queue=4, wait_s=5)
    admission = gate.admit()  # a question between its model calls holds no slot
    entered = threading.Event()

    def warm_up() -> None:
        with gate.warm_up_turn():
            entered.set()

    thread = threading.Thread(target=warm_up)
    thread.start()
    assert not entered.wait(0.2)
    admission.release()
    assert entered.wait(5)
    thread.join(5)
    assert gate.in_flight == 0 and gate.warming == 0


def test_a_waiting_question_is_served_before_the_next_warm_up_call():
    gate = LLMGate(concurrency=1, queue=4, wait_s=5)
    order: list[str] = []
    first_call = gate.warm_up_turn()
    first_call.__enter__()  # the warm-up's first call holds the only slot

    def question() -> None:
        with gate.admit() as admission:
            admission.wait_for_model(time.monotonic() + 10)
            with gate.turn():
                order.append("question")
                time.sleep(0.05)

    def next_warm_up_call() -> None:
        with gate.warm_up_turn():
            order.append("warm-up")

    asked = threading.Thread(target=question)
    asked.start()
    wait_until(lambda: gate.waiting == 1, "the question to wait")
    warming = threading.Thread(target=next_warm_up_call)
    warming.start()
    time.sleep(0.1)
    first_call.__exit__(None, None, None)
    asked.join(10)
    warming.join(10)
    assert order == ["question", "warm-up"]


def test_time_behind_a_warm_up_call_is_not_counted_against_the_gate_wait():
    gate = LLMGate(concurrency=1, queue=4, wait_s=0.1)
    release = threading.Event()

    def slow_warm_up_call() -> None:
        with gate.warm_up_turn():
            release.wait(10)

    warming = threading.Thread(target=slow_warm_up_call)
    warming.start()
    wait_until(lambda: gate.warming == 1, "the warm-up call")
    threading.Timer(0.5, release.set).start()
    began = time.monotonic()
    gate.wait_free(until=time.monotonic() + 30)  # waits for the call, past wait_s
    assert time.monotonic() - began > gate.wait_s and release.is_set()
    warming.join(5)


def test_a_question_behind_a_warm_up_call_gives_up_at_its_deadline():
    gate = LLMGate(concurrency=1, queue=4, wait_s=0.05)
    with gate.warm_up_turn():
        began = time.monotonic()
        with pytest.raises(GateTimeoutError, match="before the question's deadline"):
            gate.wait_free(until=time.monotonic() + 0.3)
        assert time.monotonic() - began >= 0.3
    assert gate.rejected_timeout == 1


def test_a_question_behind_another_question_still_gives_up_after_the_gate_wait():
    gate = LLMGate(concurrency=1, queue=4, wait_s=0.1)
    with gate.turn(), pytest.raises(GateTimeoutError, match=r"within 0\.1 s"):
        gate.wait_free(until=time.monotonic() + 30)


# ------------------------------------------------------------------- over HTTP
class HeldEmbedder(HashingEmbedder):
    """Embeds only once ``release`` is set: the index build waits for it."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def embed(self, texts):  # type: ignore[no-untyped-def]
        assert self.release.wait(30)
        return super().embed(texts)


class ServedTiers(Tiers):
    """Scripted tiers that describe themselves for /v1/health, as ``LLMTiers`` does."""

    def describe(self) -> list[dict[str, Any]]:
        return [{"name": name, "backend": "scripted"} for name in self.llms]


class LoadingTiers(ServedTiers):
    """Tiers whose models load once ``loaded`` is set (a model load takes its time)."""

    def __init__(self, **llms: ScriptedLLM) -> None:
        super().__init__(**llms)
        self.loaded = threading.Event()

    def get(self, name: str | None = None) -> ScriptedLLM:
        assert self.loaded.wait(30)
        return super().get(name)


@contextmanager
def serving(
    tmp_path, store_url: str, target_url: str, llms: Any, embedder: Any = None, **settings: Any
) -> Iterator[tuple[AppState, TestClient, dict[str, dict[str, str]]]]:
    """A started app over target "shop" with one tier, not waiting for anything; the state,
    a client and headers for an analyst and an ops key (who may see the health details)."""
    state = build_state(
        make_settings(
            tmp_path,
            store_url,
            target_url=target_url,
            target_name="shop",
            llm_tiers=[{"name": "default"}],
            **settings,
        ),
        embedder=embedder or HashingEmbedder(),
        llms=llms,
    )
    with TestClient(create_app(state)) as client:
        headers = {
            role: {"Authorization": f"Bearer {state.keys.create(role=role, user=role)[1]}"}
            for role in ("analyst", "ops")
        }
        yield state, client, headers


def ask(client: TestClient, headers: dict[str, str]) -> Future:
    return in_thread(lambda: client.post("/v1/ask", headers=headers, json={"question": QUESTION}))


@SQLITE_STORE
def test_a_question_asked_while_the_indices_build_waits_and_is_answered(
    tmp_path, store_url, sqlite_target
):
    profile_shop(store_url, sqlite_target)
    embedder = HeldEmbedder()
    llm = model()
    with serving(tmp_path, store_url, sqlite_target, ServedTiers(default=llm), embedder) as (
        state,
        client,
        headers,
    ):
        assert client.get("/v1/health").json() == {"status": "starting"}
        asked = ask(client, headers["analyst"])
        wait_until(lambda: state.llm_gate.questions == 1, "the question to be admitted")
        time.sleep(0.1)
        assert not asked.done() and llm.calls == []  # it waits for the indices
        embedder.release.set()
        reply = asked.result(30)
        assert reply.status_code == 200, reply.text
        assert sorted(reply.json()["rows"]) == [["Ada"], ["Cy"]]
        assert client.get("/v1/health").json() == {"status": "ready"}  # models load lazily


@SQLITE_STORE
def test_health_shows_each_component_while_a_model_loads_and_a_question_waits(
    tmp_path, store_url, sqlite_target
):
    profile_shop(store_url, sqlite_target)
    llm = model()
    tiers = LoadingTiers(default=llm)
    with serving(tmp_path, store_url, sqlite_target, tiers, warm_on_start=True) as (
        state,
        client,
        headers,
    ):
        state.indices.wait_ready(30)
        state.readiness.wait_settled([INDICES], time.monotonic() + 30)
        assert client.get("/v1/health").json() == {"status": "warming"}  # public: the status
        details = client.get("/v1/health", headers=headers["ops"]).json()
        assert details["status"] == "warming"
        components = details["components"]
        assert components[INDICES]["state"] == "ready"
        assert components[DEFAULT]["state"] == "warming"
        assert components[PREFILL]["state"] == "starting"
        assert client.get("/v1/health", headers=headers["analyst"]).json() == {"status": "warming"}
        asked = ask(client, headers["analyst"])
        wait_until(lambda: state.llm_gate.questions == 1, "the question to be admitted")
        time.sleep(0.1)
        assert not asked.done()  # it waits for the model, not 503
        tiers.loaded.set()
        reply = asked.result(30)
        assert reply.status_code == 200, reply.text
        state.readiness.wait_settled([PREFILL], time.monotonic() + 30)
        details = client.get("/v1/health", headers=headers["ops"]).json()
        assert details["status"] == "ready"
        assert {c["state"] for c in details["components"].values()} == {"ready"}
        assert client.get("/v1/health").json() == {"status": "ready"}
    # the question was served first: the warm-up's prefill came after it
    assert llm.calls[0][1].get("max_tokens") != 1 and llm.calls[1][1]["max_tokens"] == 1


@SQLITE_STORE
def test_a_question_asked_while_a_warm_up_call_holds_the_model_waits_past_the_gate_wait(
    tmp_path, store_url, sqlite_target
):
    profile_shop(store_url, sqlite_target)
    prefill_may_end = threading.Event()

    def slow_prefill(messages, options) -> str:
        prefill_may_end.wait(30)
        return "(warming token)"

    llm = model(slow_prefill)
    limits = {"llm_queue_wait_s": 0.2}
    with serving(
        tmp_path,
        store_url,
        sqlite_target,
        ServedTiers(default=llm),
        warm_on_start=True,
        limits=limits,
    ) as (state, client, headers):
        wait_until(lambda: state.llm_gate.warming == 1, "the prefill to hold the model")
        asked = ask(client, headers["analyst"])
        wait_until(lambda: state.llm_gate.waiting == 1, "the question to wait for the model")
        time.sleep(3 * 0.2)
        assert not asked.done()  # three times the gate's wait, and still waiting
        prefill_may_end.set()
        reply = asked.result(30)
        assert reply.status_code == 200, reply.text
        assert sorted(reply.json()["rows"]) == [["Ada"], ["Cy"]]
        assert state.llm_gate.rejected_timeout == 0


@SQLITE_STORE
def test_a_warm_up_longer_than_the_questions_deadline_answers_503(
    tmp_path, store_url, sqlite_target
):
    profile_shop(store_url, sqlite_target)
    tiers = LoadingTiers(default=model())
    limits = {"ask_deadline_s": 0.5}
    with serving(tmp_path, store_url, sqlite_target, tiers, warm_on_start=True, limits=limits) as (
        state,
        client,
        headers,
    ):
        try:
            assert state.indices.wait_ready(30)
            reply = ask(client, headers["analyst"]).result(30)
        finally:
            tiers.loaded.set()
    assert reply.status_code == 503 and reply.headers["Retry-After"]
    assert "still warming up: the model of LLM tier default is still loading" in reply.text


@SQLITE_STORE
def test_an_unprofiled_target_skips_the_prefill_and_is_ready(tmp_path, store_url, sqlite_target):
    llm = model()
    with serving(
        tmp_path, store_url, sqlite_target, ServedTiers(default=llm), warm_on_start=True
    ) as (
        state,
        client,
        headers,
    ):
        everything = [INDICES, DEFAULT, PREFILL]
        assert state.readiness.wait_settled(everything, time.monotonic() + 30) == []
        prefill = client.get("/v1/health", headers=headers["ops"]).json()["components"][PREFILL]
        assert prefill["state"] == "skipped" and "shared" in prefill["detail"]
        assert client.get("/v1/health").json() == {"status": "ready"} and llm.calls == []
