"""``DELETE /v1/jobs/{id}`` stops a running describe job within seconds even in the middle of
an LLM call, or while the job waits for a model another call holds: the job ends
``cancelled``, nothing is written, and the other call answers as if nothing happened.

The describer is the real LLM describer over the real 0.5B test model.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agents.learn.describe import LLMDescriber
from agents.llm.base import ChatResult
from agents.llm.llamacpp import LlamaCppLLM

STOPPED_WITHIN_S = 10.0
COUNTING = [{"role": "user", "content": "Write the numbers from 1 to 400, one per line."}]


@pytest.fixture()
def store_url(tmp_path) -> str:
    """SQLite alone: what is tested here does not depend on the store."""
    return f"sqlite:///{tmp_path / 'knowledge.db'}"


@pytest.fixture(scope="module")
def llama(embedded_model_path: Path) -> LlamaCppLLM:
    return LlamaCppLLM(str(embedded_model_path), n_ctx=4096, seed=7)


class WatchedLLM:
    """The model as the describer sees it, noting when a call starts and how it ended."""

    def __init__(self, inner: LlamaCppLLM) -> None:
        self.inner, self.name = inner, inner.name
        self.entered = threading.Event()
        self.errors: list[BaseException] = []

    def chat(self, messages: Any, **options: Any) -> ChatResult:
        self.entered.set()
        try:
            return self.inner.chat(messages, **options)
        except BaseException as exc:
            self.errors.append(exc)
            raise


def _cancel_when_called(server: Any, llm: WatchedLLM) -> tuple[dict[str, Any], float]:
    """Submit a describe job, cancel it once its first LLM call is under way; the job as it
    ended and the seconds from the cancel to its end."""
    reply = server.request("POST", "/v1/jobs", "ops", json={"kind": "describe", "params": {}})
    assert reply.status_code == 202, reply.text
    job_id = reply.json()["id"]
    assert llm.entered.wait(60), "the describe job never called the model"
    time.sleep(0.3)
    cancelled_at = time.monotonic()
    stopping = server.request("DELETE", f"/v1/jobs/{job_id}", "ops").json()
    assert stopping["cancel_requested"] is True, stopping
    job = server.wait_job(job_id, timeout=60)
    return job, time.monotonic() - cancelled_at


@pytest.mark.slow
def test_cancelling_a_describe_job_stops_its_llm_call_under_way(make_server, sqlite_target, llama):
    llm = WatchedLLM(llama)
    server = make_server(target_url=sqlite_target, describer_factory=lambda: LLMDescriber(llm))
    job, took = _cancel_when_called(server, llm)
    assert job["state"] == "cancelled", job
    assert took < STOPPED_WITHIN_S, (took, job)
    assert [type(e).__name__ for e in llm.errors] == ["LLMCancelledError"]  # stopped mid-call
    assert server.state.store.count(active=None) == 0  # nothing written
    assert (
        "SELECT"
        in llama.chat(
            [{"role": "user", "content": "Write SQL counting the rows of table orders."}],
            max_tokens=48,
        ).text.upper()
    )  # the model is fine afterwards


@pytest.mark.slow
def test_cancelling_a_describe_job_waiting_for_a_busy_model(make_server, sqlite_target, llama):
    answers: list[ChatResult] = []
    holder = threading.Thread(target=lambda: answers.append(llama.chat(COUNTING, max_tokens=400)))
    holder.start()
    deadline = time.monotonic() + 30
    while not llama._lock.locked() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert llama._lock.locked(), "the long call never took the model"
    llm = WatchedLLM(llama)
    server = make_server(target_url=sqlite_target, describer_factory=lambda: LLMDescriber(llm))
    job, took = _cancel_when_called(server, llm)
    assert job["state"] == "cancelled", job
    assert took < STOPPED_WITHIN_S, (took, job)
    assert holder.is_alive()  # the job did not wait for the long call to end
    assert "waiting for the model" in str(llm.errors[0])
    assert server.state.store.count(active=None) == 0
    holder.join(600)
    lines = answers[0].text.split()
    assert lines[:5] == ["1", "2", "3", "4", "5"], answers[0].text[:200]  # answered in full
    assert answers[0].completions[0].finish_reason == "length"
