"""The LLM gate's admission of questions and the SQL pool's bounds (units)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from server.limits import GateFullError, GateTimeoutError, LLMGate
from server.settings import LimitSettings
from server.sql_pool import SqlPool, SqlPoolFullError


def test_questions_are_admitted_up_to_concurrency_plus_queue():
    gate = LLMGate(concurrency=1, queue=1, wait_s=0.2)
    first, second = gate.admit(), gate.admit()
    with pytest.raises(GateFullError, match="queue is full"):
        gate.admit()
    first.release()
    first.release()  # twice is harmless
    with gate.admit():
        assert gate.questions == 2
    second.release()
    assert gate.questions == 0 and gate.rejected_full == 1


def test_a_question_holds_a_slot_only_during_its_model_calls():
    gate = LLMGate(concurrency=1, queue=0, wait_s=0.2)
    with gate.admit() as admitted:
        admitted.wait_for_model()
        assert gate.in_flight == 0  # waiting for a free slot takes none
        with gate.turn():
            assert gate.in_flight == 1
            with pytest.raises(GateTimeoutError):
                admitted.wait_for_model()
        assert gate.in_flight == 0


def test_a_turn_waits_past_the_queue_bound_and_is_woken_when_a_slot_frees():
    gate = LLMGate(concurrency=1, queue=0, wait_s=5)
    inside, leave = threading.Event(), threading.Event()

    def second_call() -> None:
        with gate.turn():
            inside.set()
            leave.wait(5)

    with gate.turn():
        waiter = threading.Thread(target=second_call)
        waiter.start()
        while gate.waiting == 0:
            time.sleep(0.005)
        assert not inside.is_set()
    assert inside.wait(2) and gate.in_flight == 1
    leave.set()
    waiter.join(2)
    assert gate.in_flight == 0


def test_the_sql_pool_bounds_each_key_and_the_whole():
    pool = SqlPool(concurrency=1, queue=1, per_key=1)
    release = threading.Event()

    async def refusal(key: str) -> SqlPoolFullError:
        with pytest.raises(SqlPoolFullError) as refused:
            await pool.run(key, lambda: "never")
        return refused.value

    async def scenario() -> None:
        running = asyncio.ensure_future(pool.run("a", lambda: release.wait(5)))
        waiting = asyncio.ensure_future(pool.run("b", lambda: "b ran"))
        await asyncio.sleep(0.05)
        assert (pool.running, pool.waiting) == (1, 1)
        same_key = await refusal("a")
        assert same_key.status_code == 429 and "this key already has 1" in same_key.detail
        assert same_key.headers == {"Retry-After": "1"}
        full = await refusal("c")
        assert full.status_code == 429 and "pool is full (1 running, 1 waiting)" in full.detail
        release.set()
        assert await running is True and await waiting == "b ran"
        assert await pool.run("c", lambda: "c ran") == "c ran"

    asyncio.run(scenario())
    assert pool.admitted == 0 and pool.rejected == 2
    pool.close()


def test_the_answer_deadline_stays_inside_the_request_timeout():
    assert LimitSettings().answer_deadline_s == 115.0
    assert LimitSettings(request_timeout_s=10).answer_deadline_s == 9.0
    assert LimitSettings(ask_deadline_s=30).answer_deadline_s == 30.0
    assert LimitSettings(ask_deadline_s=300, request_timeout_s=60).answer_deadline_s == 55.0


def test_a_tier_model_takes_its_turn_per_call_and_a_long_wait_is_a_busy_model():
    from agents.llm.base import LLMBusyError
    from server.ask_service import _GatedLLM
    from tests.agents.scripted import ScriptedLLM

    gate = LLMGate(concurrency=1, queue=0, wait_s=0.1)
    seen: list[int] = []

    def reply(messages: object, options: object) -> str:
        seen.append(gate.in_flight)
        return "ok"

    model = ScriptedLLM([reply])
    tier = _GatedLLM(lambda: model, "default", gate)
    assert tier.chat([{"role": "user", "content": "hi"}]).text == "ok"
    assert seen == [1] and gate.in_flight == 0
    with gate.turn(), pytest.raises(LLMBusyError, match="default: no LLM slot came free"):
        tier.chat([{"role": "user", "content": "hi"}])
