"""Cancelling an LLM call: within seconds while it prefills, generates or waits for the model,
and the model answers the next call exactly as if nothing had been cancelled; a call's timeout
stops its prefill the same way.

The embedded model is the real 0.5B test model; the prompt is long enough that prefilling it
takes longer than the half second after which it is cancelled.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agents.llm.base import (
    Cancellation,
    ChatResult,
    Completion,
    LLMCancelledError,
    LLMError,
    LLMTimeoutError,
    ResilientLLM,
    cancellation_scope,
    current_cancellation,
)
from agents.llm.llamacpp import LlamaCppLLM
from agents.llm.openai_compat import OpenAICompatibleLLM

STOPPED_WITHIN_S = 10.0
SCHEMA = "\n".join(
    f"CREATE TABLE t{i} (id INTEGER PRIMARY KEY, name_{i} TEXT, amount_{i} NUMERIC, "
    f"created_{i} DATE, status_{i} TEXT);"
    for i in range(40)
)
LONG = [
    {"role": "system", "content": "You write SQLite SQL. Answer with SQL only.\n" + SCHEMA},
    {"role": "user", "content": "Count the rows of table t7."},
]
OTHER = [{"role": "user", "content": "Say hello."}]
COUNTING = [{"role": "user", "content": "Write the numbers from 1 to 600, one per line."}]


@pytest.fixture(scope="module")
def llama(embedded_model_path: Path) -> LlamaCppLLM:
    return LlamaCppLLM(str(embedded_model_path), n_ctx=4096, seed=7)


@pytest.fixture(scope="module")
def reference(llama: LlamaCppLLM) -> ChatResult:
    """The uncancelled answer to LONG, prefilled after OTHER (as every call here is)."""
    llama.chat(OTHER, max_tokens=1)
    return llama.chat(LONG, max_tokens=24)


def cancel_later(
    seconds: float, when: Callable[[], bool] = lambda: True
) -> tuple[Cancellation, Callable[[], float]]:
    """A token cancelled after ``seconds`` once ``when()`` holds, and a function giving the
    time since it was cancelled."""
    token = Cancellation()
    cancelled_at: list[float] = []

    def cancel() -> None:
        deadline = time.monotonic() + 300
        while not when() and time.monotonic() < deadline:
            time.sleep(0.01)
        cancelled_at.append(time.monotonic())
        token.cancel("cancelled by the test")

    timer = threading.Timer(seconds, cancel)
    timer.daemon = True
    timer.start()
    return token, lambda: time.monotonic() - cancelled_at[0]


@pytest.mark.slow
def test_a_cancel_during_prefill_stops_it_and_the_next_call_answers_the_same(llama, reference):
    llama.chat(OTHER, max_tokens=1)
    prompt_tokens = reference.prompt_tokens
    token, since_cancel = cancel_later(0.5)
    with cancellation_scope(token), pytest.raises(LLMCancelledError, match="prefill") as stopped:
        llama.chat(LONG, max_tokens=24)
    assert since_cancel() < STOPPED_WITHIN_S, stopped.value
    assert llama._llama.n_tokens < prompt_tokens  # stopped part-way through the prompt
    again = llama.chat(LONG, max_tokens=24)
    assert again.text == reference.text


@pytest.mark.slow
def test_a_timeout_during_prefill_stops_it_there_and_the_next_call_answers_the_same(
    llama, reference
):
    llama.chat(OTHER, max_tokens=1)
    started = time.monotonic()
    with pytest.raises(LLMTimeoutError, match="prefill") as stopped:
        llama.chat(LONG, max_tokens=24, timeout=0.5)
    assert time.monotonic() - started < STOPPED_WITHIN_S, stopped.value
    assert llama._llama.n_tokens < reference.prompt_tokens  # stopped part-way through it
    assert llama.chat(LONG, max_tokens=24).text == reference.text


@pytest.mark.slow
def test_a_cancel_during_generation_stops_it_and_the_model_answers_next(llama, reference):
    llama.chat(OTHER, max_tokens=1)  # the context holds fewer tokens than COUNTING's prompt
    prompt = len(llama._templated(COUNTING, None)[0])
    token, since_cancel = cancel_later(0, when=lambda: llama._llama.n_tokens > prompt + 8)
    with cancellation_scope(token), pytest.raises(LLMCancelledError) as stopped:
        llama.chat(COUNTING, max_tokens=1500)  # some 1,500 tokens: minutes
    assert since_cancel() < STOPPED_WITHIN_S, stopped.value
    assert "generating" in str(stopped.value) or "evaluating" in str(stopped.value)
    assert prompt + 8 < llama._llama.n_tokens < prompt + 1500
    llama.chat(OTHER, max_tokens=1)
    assert llama.chat(LONG, max_tokens=24).text == reference.text


@pytest.mark.slow
def test_a_cancel_while_another_call_holds_the_model_ends_the_wait(llama, reference):
    llama.chat(OTHER, max_tokens=1)
    answers: list[ChatResult] = []
    holder = threading.Thread(target=lambda: answers.append(llama.chat(LONG, max_tokens=24)))
    holder.start()
    deadline = time.monotonic() + 30
    while not llama._lock.locked() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert llama._lock.locked(), "the other call never took the model"
    token, since_cancel = cancel_later(0.5)
    with cancellation_scope(token), pytest.raises(LLMCancelledError, match="waiting for the model"):
        llama.chat(OTHER, max_tokens=8)
    assert since_cancel() < STOPPED_WITHIN_S
    assert holder.is_alive()  # the wait ended without waiting for the other call
    holder.join(300)
    assert answers and answers[0].text == reference.text  # and that call was not disturbed


def test_a_call_cancelled_before_it_starts_never_touches_the_model(llama):
    token = Cancellation()
    token.cancel("stop")
    before = llama._llama.n_tokens
    with cancellation_scope(token), pytest.raises(LLMCancelledError, match="stop"):
        llama.chat(OTHER, max_tokens=8)
    assert llama._llama.n_tokens == before
    assert current_cancellation() is None  # the scope ended with the block


# ------------------------------------------------------------------------- wrappers
class _Failing:
    """An LLM whose calls fail (orchestration only: the retry rule of ResilientLLM)."""

    name = "failing"

    def __init__(self, error: LLMError) -> None:
        self.error, self.calls = error, 0

    def chat(self, messages: Any, **options: Any) -> ChatResult:
        self.calls += 1
        raise self.error


def test_resilient_llm_neither_retries_a_cancelled_call_nor_sleeps_through_a_cancel():
    cancelled = _Failing(LLMCancelledError("stopped"))
    with pytest.raises(LLMCancelledError):
        ResilientLLM(cancelled, retries=3, backoff_s=0).chat(OTHER)
    assert cancelled.calls == 1
    failing = _Failing(LLMError("backend down"))
    token, since_cancel = cancel_later(0.3)
    with cancellation_scope(token), pytest.raises(LLMCancelledError):
        ResilientLLM(failing, retries=3, backoff_s=60).chat(OTHER)  # would sleep 60 s
    assert failing.calls == 1 and since_cancel() < STOPPED_WITHIN_S


def test_resilient_llm_stops_waiting_for_a_slot_when_cancelled():
    class Holding:
        name = "holding"

        def __init__(self) -> None:
            self.entered, self.release = threading.Event(), threading.Event()

        def chat(self, messages: Any, **options: Any) -> ChatResult:
            self.entered.set()
            self.release.wait(30)
            return ChatResult([Completion("done")], self.name)

    inner = Holding()
    llm = ResilientLLM(inner, max_concurrency=1, max_wait_s=120)
    holder = threading.Thread(target=lambda: llm.chat(OTHER))
    holder.start()
    assert inner.entered.wait(10)
    token, since_cancel = cancel_later(0.3)
    with cancellation_scope(token), pytest.raises(LLMCancelledError):
        llm.chat(OTHER)
    assert since_cancel() < STOPPED_WITHIN_S
    inner.release.set()
    holder.join(10)


# ------------------------------------------------------------ OpenAI-compatible
@pytest.fixture()
def slow_endpoint() -> Iterator[tuple[str, threading.Event]]:
    """An endpoint that answers only when released (a server busy with a long reply)."""
    release = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            release.wait(60)
            body = (
                b'{"id":"x","object":"chat.completion","created":0,"model":"m","choices":'
                b'[{"index":0,"finish_reason":"stop","message":{"role":"assistant",'
                b'"content":"SELECT 1"}}],"usage":{"prompt_tokens":1,"completion_tokens":1,'
                b'"total_tokens":2}}'
            )
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", release
    release.set()
    httpd.shutdown()
    httpd.server_close()


def test_an_openai_compatible_call_stops_waiting_for_the_reply_when_cancelled(slow_endpoint):
    url, release = slow_endpoint
    llm = OpenAICompatibleLLM(url, "m", timeout=60)
    token, since_cancel = cancel_later(0.3)
    with cancellation_scope(token), pytest.raises(LLMCancelledError, match="waiting for"):
        llm.chat(OTHER)
    assert since_cancel() < STOPPED_WITHIN_S
    release.set()
    assert llm.chat(OTHER).text == "SELECT 1"  # without a token: waits as before
