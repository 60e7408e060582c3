"""Limits: the LLM gate (429 when its queue is full, 503 when the wait runs out), the
request timeout (504), the question length, and the body size for streamed bodies."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi import APIRouter, HTTPException, Request
from fastapi.testclient import TestClient

from agents.llm.base import LLMBusyError
from server.app import create_app
from server.deps import get_state
from server.limits import GateFullError, GateTimeoutError, LLMGate, check_text_length
from server.state import build_state
from tests.server.conftest import make_settings


def test_the_gate_admits_queues_and_refuses():
    gate = LLMGate(concurrency=1, queue=1, wait_s=0.2)
    inside, release = threading.Event(), threading.Event()

    def hold() -> None:
        with gate.slot():
            inside.set()
            release.wait(5)

    holder = threading.Thread(target=hold)
    holder.start()
    assert inside.wait(5)
    outcomes: list[str] = []

    def wait_for_slot() -> None:
        try:
            with gate.slot():
                outcomes.append("ran")
        except GateTimeoutError:
            outcomes.append("timeout")

    waiter = threading.Thread(target=wait_for_slot)
    waiter.start()
    while gate.waiting == 0:
        time.sleep(0.01)
    with pytest.raises(GateFullError, match="queue is full"), gate.slot():
        pass
    waiter.join()
    assert outcomes == ["timeout"] and gate.rejected_full == 1 and gate.rejected_timeout == 1
    release.set()
    holder.join()
    with gate.slot():
        assert gate.in_flight == 1
    assert gate.in_flight == 0 and gate.waiting == 0


def test_a_waiting_caller_gets_the_slot_when_it_frees():
    gate = LLMGate(concurrency=1, queue=4, wait_s=5)
    order: list[int] = []

    def work(i: int) -> None:
        with gate.slot():
            order.append(i)
            time.sleep(0.05)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(work, range(4)))
    assert sorted(order) == [0, 1, 2, 3] and gate.in_flight == 0


def _llm_router(release: threading.Event) -> APIRouter:
    """What the ask endpoint does with the gate: hold a slot while the LLM works."""
    router = APIRouter()

    @router.post("/test/llm")
    def call_llm(request: Request) -> dict:
        with get_state(request).llm_gate.slot():
            release.wait(10)
        return {"ok": True}

    @router.post("/test/busy")
    def busy() -> dict:
        raise LLMBusyError("llama: all slots busy for 30 s")

    @router.get("/test/slow")
    def slow() -> dict:
        time.sleep(2.5)
        return {"late": True}

    @router.get("/test/question")
    def question(q: str, request: Request) -> dict:
        check_text_length(q, get_state(request).settings.limits.max_question_chars)
        return {"ok": True}

    return router


@pytest.fixture()
def limited(tmp_path):
    settings = make_settings(
        tmp_path,
        f"sqlite:///{tmp_path / 'knowledge.db'}",
        limits={
            "llm_concurrency": 1,
            "llm_queue": 1,
            "llm_queue_wait_s": 0.3,
            "request_timeout_s": 1.0,
            "max_question_chars": 10,
        },
    )
    state = build_state(settings, embedder=None, llms=None)
    release = threading.Event()
    with TestClient(create_app(state, routers=[_llm_router(release)])) as client:
        yield client, state, release
        release.set()


def test_a_saturated_llm_answers_429_then_503(limited):
    client, state, release = limited
    with ThreadPoolExecutor(3) as pool:
        first = pool.submit(client.post, "/test/llm")
        while state.llm_gate.in_flight == 0:
            time.sleep(0.01)
        second = pool.submit(client.post, "/test/llm")
        while state.llm_gate.waiting == 0:
            time.sleep(0.01)
        third = client.post("/test/llm")
        assert third.status_code == 429 and "queue is full" in third.json()["detail"]
        assert third.headers["retry-after"] == "1"
        timed_out = second.result()
        assert timed_out.status_code == 503 and timed_out.headers["retry-after"]
        release.set()
        assert first.result().status_code == 200
    busy = client.post("/test/busy")
    assert busy.status_code == 503 and "busy" in busy.json()["detail"]
    metrics = state.metrics.render()
    assert 'almanac_llm_gate{kind="rejected_full"} 1' in metrics
    assert 'almanac_llm_gate{kind="rejected_timeout"} 1' in metrics


def test_a_slow_request_times_out_with_504(limited):
    client, state, _release = limited
    reply = client.get("/test/slow")
    assert reply.status_code == 504 and "timeout" in reply.json()["detail"]
    assert state.metrics.requests.value("GET", "/test/slow", "504") == 1
    assert client.get("/v1/health").status_code == 200  # the server goes on


def test_questions_over_the_length_limit_are_refused(limited):
    client, _state, _release = limited
    assert client.get("/test/question", params={"q": "short"}).status_code == 200
    long = client.get("/test/question", params={"q": "x" * 11})
    assert long.status_code == 422 and "11 characters" in long.json()["detail"]
    with pytest.raises(HTTPException):
        check_text_length("abc", 2, "query")
