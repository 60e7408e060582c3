"""A question's deadline and a decided tier stop the model calls still running.

The model here waits on the current :class:`~agents.llm.base.Cancellation` the way the real
backends do between tokens (their own behaviour under a token is in ``test_llm_cancel.py``).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from agents.llm.base import (
    Cancellation,
    ChatResult,
    Completion,
    LLMCancelledError,
    cancellation_scope,
    current_cancellation,
)
from agents.pipeline import AskOptions, ModelTier, Pipeline
from indices.embeddings import HashingEmbedder
from indices.index_set import IndexSet
from tests.agents.scripted import sql_reply
from tests.agents.test_pipeline import FRANCE, QUESTION, make

HANG_S = 60.0  # far longer than any deadline below: a call that is not stopped fails the test


class TokenWatchingLLM:
    """Answers at once for the first ``quick`` calls, then holds each call until the current
    token is cancelled (or ``HANG_S``), raising :class:`LLMCancelledError` like a backend.

    With ``together``, the quick calls first wait (up to 10 s) until that many calls have
    started, so on a loaded machine the held draws are running when the quick ones agree."""

    def __init__(self, quick: int = 0, reply: str = sql_reply(FRANCE), together: int = 0) -> None:
        self.name, self.quick, self.reply, self.together = "watching", quick, reply, together
        self.calls = 0
        self.stopped: list[str] = []
        self._lock = threading.Condition()

    def chat(self, messages: Any, **options: Any) -> ChatResult:
        with self._lock:
            self.calls += 1
            index = self.calls
            self._lock.notify_all()
            if index <= self.quick:
                self._lock.wait_for(lambda: self.calls >= self.together, timeout=10)
        if index > self.quick:
            token = current_cancellation()
            assert token is not None, "the call was made without a token"
            if token.wait(HANG_S):
                self.stopped.append(token.reason)
                raise LLMCancelledError(f"{self.name}: {token.reason}")
        n = options.get("n", 1)
        return ChatResult([Completion(self.reply, "stop") for _ in range(n)], model=self.name)


def test_a_token_with_a_deadline_cancels_itself_and_follows_its_parent():
    lone = Cancellation(deadline=time.monotonic() + 0.2, deadline_reason="too late")
    assert not lone.cancelled
    assert lone.wait(5.0) and lone.reason == "too late"
    parent = Cancellation()
    with cancellation_scope(parent):
        child = Cancellation(parent=current_cancellation(), deadline=time.monotonic() + 30)
    assert not child.cancelled
    parent.cancel("job cancelled")
    assert child.cancelled and child.reason == "job cancelled"
    assert not Cancellation(deadline=time.monotonic() + 30).wait(0.05)  # a plain timeout


def test_the_deadline_stops_a_model_call_that_is_still_running(concert):
    # a first, quick question loads what the first ask loads (lemmas, caches), so on a loaded
    # machine the deadline below is not spent before the model is called
    llm = TokenWatchingLLM(quick=1)
    pipeline = make(concert, llm)
    assert pipeline.ask(QUESTION).error is None and llm.calls == 1
    started = time.monotonic()
    answer = pipeline.ask(QUESTION, options=AskOptions(deadline_s=2.0))
    took = time.monotonic() - started
    assert llm.calls == 2, "the deadline passed before the model was called"
    assert llm.stopped == ["the question's deadline passed"]
    assert took < HANG_S / 2  # stopped, not waited out
    assert answer.error is not None and not answer.executed


def test_a_job_cancel_reaches_the_model_through_the_question_deadline(concert):
    llm = TokenWatchingLLM()
    job = Cancellation()
    timer = threading.Timer(0.5, job.cancel, args=("job 7 was cancelled",))
    timer.start()
    with cancellation_scope(job):
        answer = make(concert, llm).ask(QUESTION, options=AskOptions(deadline_s=HANG_S))
    timer.join()
    assert set(llm.stopped) == {"job 7 was cancelled"} and answer.error is not None


def test_samples_still_drawing_stop_once_two_results_agree(concert):
    # the small tier draws four at once: two quick ones agree, the others hold the model
    store, database, _ = concert
    small, large = TokenWatchingLLM(quick=2, together=4), TokenWatchingLLM(quick=99)
    pipeline = Pipeline(
        store=store,
        retriever=IndexSet.build(store, HashingEmbedder()).retriever(),
        database=database,
        database_name="concert_singer",
        tiers=[ModelTier("small", small, samples=4, parallel=4), ModelTier("large", large)],
    )
    answer = pipeline.ask(QUESTION, options=AskOptions(cascade=True))
    assert answer.error is None and answer.row_count == 4 and answer.tier == "small"
    deadline = time.monotonic() + 10
    while len(small.stopped) < small.calls - 2 and time.monotonic() < deadline:
        time.sleep(0.05)  # the stopped draws end in the background
    assert small.calls == 4 and len(small.stopped) == 2, small.stopped
    assert all("tier small stopped" in reason for reason in small.stopped)
    assert large.calls == 0
