"""The LLM interface: the real embedded model, an OpenAI-compatible endpoint, the wrappers."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from agents.llm.base import (
    ChatResult,
    Completion,
    LLMBusyError,
    LLMError,
    LLMOutputError,
    LLMTimeoutError,
    ResilientLLM,
    continue_reply,
)
from agents.llm.llamacpp import LlamaCppLLM
from agents.llm.openai_compat import OpenAICompatibleLLM

ASK = [
    {"role": "system", "content": "You write SQLite SQL. Answer with SQL only."},
    {"role": "user", "content": "Count the rows of table orders."},
]


@pytest.fixture(scope="module")
def llama(embedded_model_path: Path) -> LlamaCppLLM:
    return LlamaCppLLM(str(embedded_model_path), n_ctx=2048, seed=7)


def test_a_reply_prefix_is_continued_up_to_the_stop(llama):
    result = llama.chat(ASK, max_tokens=64, reply_prefix="```sql\n", stop=["```"])
    text = result.text
    assert text.startswith("```sql\n") and "select" in text.lower() and "orders" in text.lower()
    assert "```" not in text[len("```sql\n") :], text  # stopped at the closing fence
    assert result.prompt_tokens > 0 and 0 < result.completion_tokens < 64
    sampled = llama.chat(ASK, n=2, temperature=0.9, max_tokens=64, reply_prefix="```sql\n")
    assert all(c.text.startswith("```sql\n") for c in sampled.completions)


def test_the_embedded_model_answers(llama):
    result = llama.chat(ASK, max_tokens=48)
    assert "select" in result.text.lower() and "orders" in result.text.lower()
    assert result.completion_tokens > 0 and result.prompt_tokens > 0 and result.latency_s > 0


def test_samples_stops_and_token_limits(llama):
    sampled = llama.chat(ASK, n=2, temperature=0.9, max_tokens=32)
    assert len(sampled.completions) == 2
    short = llama.chat(ASK, max_tokens=3)
    assert short.completions[0].finish_reason == "length"
    stopped = llama.chat(ASK, max_tokens=48, stop=["orders"])
    assert "orders" not in stopped.text.lower()


def test_json_schema_output_parses(llama):
    schema = {"type": "object", "properties": {"sql": {"type": "string"}}, "required": ["sql"]}
    result = llama.chat(
        [*ASK[:1], {"role": "user", "content": 'Count orders. Reply as JSON {"sql": ...}.'}],
        json_schema=schema,
        max_tokens=64,
    )
    assert "sql" in result.completions[0].json()


def test_a_timeout_stops_the_generation(llama):
    with pytest.raises(LLMTimeoutError):
        llama.chat(ASK, max_tokens=200, timeout=0.01)


class _Endpoint(BaseHTTPRequestHandler):
    """A scripted OpenAI-compatible server: each request pops the next behaviour."""

    script: ClassVar[list[str]] = []
    content: ClassVar[str] = "SELECT 1"
    bodies: ClassVar[list[dict]] = []

    def do_POST(self) -> None:
        self.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        action = self.script.pop(0) if self.script else "ok"
        if action == "slow":
            time.sleep(2)
        if action == "error":
            self.send_response(500)
            self.end_headers()
            return
        body = (
            b"not json at all"
            if action == "garbage"
            else json.dumps(
                {
                    "id": "x",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "m",
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": self.content},
                        }
                    ],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
                }
            ).encode()
        )
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        return


@pytest.fixture()
def endpoint():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Endpoint.script, _Endpoint.content, _Endpoint.bodies = [], "SELECT 1", []
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()


def test_openai_compatible_endpoint_answers_and_reports_usage(endpoint):
    result = OpenAICompatibleLLM(endpoint, "m").chat(ASK)
    assert result.text == "SELECT 1" and result.prompt_tokens == 5


def test_server_errors_are_retried_then_reported(endpoint):
    _Endpoint.script = ["error", "ok"]
    llm = ResilientLLM(OpenAICompatibleLLM(endpoint, "m"), retries=1, backoff_s=0.01)
    assert llm.chat(ASK).text == "SELECT 1"
    _Endpoint.script = ["error", "error"]
    with pytest.raises(LLMError, match=r"500|Internal|Error"):
        llm.chat(ASK)


def test_timeouts_and_garbage_are_clear_errors(endpoint):
    _Endpoint.script = ["slow"]
    with pytest.raises(LLMTimeoutError):
        OpenAICompatibleLLM(endpoint, "m").chat(ASK, timeout=0.3)
    _Endpoint.script = ["garbage"]
    with pytest.raises(LLMError):
        OpenAICompatibleLLM(endpoint, "m").chat(ASK)


def test_a_prefill_endpoint_gets_the_prefix_as_a_trailing_assistant_message(endpoint):
    _Endpoint.content = "SELECT 1\n"
    llm = OpenAICompatibleLLM(endpoint, "m", prefill=True)
    result = llm.chat(ASK, reply_prefix="```sql\n", stop=["```"])
    assert result.text == "```sql\nSELECT 1\n"
    sent = _Endpoint.bodies[-1]
    assert sent["messages"][-1] == {"role": "assistant", "content": "```sql\n"}
    assert sent["continue_final_message"] is True and sent["stop"] == ["```"]


def test_other_endpoints_answer_freely_and_the_reply_is_trimmed(endpoint):
    _Endpoint.content = "Let me think.\n```sql\nSELECT 2\n```\nThis counts the rows."
    result = OpenAICompatibleLLM(endpoint, "m").chat(ASK, reply_prefix="```sql\n", stop=["```"])
    assert result.text == "```sql\nSELECT 2\n"
    sent = _Endpoint.bodies[-1]
    assert sent["messages"][-1]["role"] == "user" and not sent.get("stop")
    assert "continue_final_message" not in sent


def test_continue_reply_keeps_the_reply_from_the_prefix_to_the_first_stop():
    assert continue_reply("```sql\n", "x ```sql\nSELECT 1\n``` y ```", ["```"]) == (
        "```sql\nSELECT 1\n"
    )
    assert continue_reply("```sql\n", "SELECT 1 ```", ["```"]) == "SELECT 1 ```"  # no prefix
    assert continue_reply("```sql\n", "```sql\nSELECT 1", None) == "```sql\nSELECT 1"
    assert continue_reply("```sql\n", "```sql\nSELECT 1;\n--", ["--", ";"]) == ("```sql\nSELECT 1")


class _Slow:
    name = "slow"

    def chat(self, messages, **options):
        time.sleep(0.5)
        return ChatResult([Completion("not json")], "slow")


def test_a_saturated_model_answers_busy_and_bad_json_is_an_output_error():
    llm = ResilientLLM(_Slow(), max_concurrency=1, max_wait_s=0.1, retries=0)
    worker = threading.Thread(target=llm.chat, args=(ASK,))
    worker.start()
    time.sleep(0.05)
    with pytest.raises(LLMBusyError):
        llm.chat(ASK)
    worker.join()
    with pytest.raises(LLMOutputError) as caught:
        Completion("```json\n{broken").json()
    assert caught.value.raw.startswith("```json")


def test_a_prompt_longer_than_the_context_is_an_llm_error(llama):
    too_long = [{"role": "user", "content": "SELECT 1; " * 3000}]
    with pytest.raises(LLMError, match="context"):
        llama.chat(too_long, max_tokens=8)


def test_loading_a_model_does_not_silence_other_threads(embedded_model_path: Path, capfd):
    """llama-cpp-python (verbose=False) used to point the process's stdout at /dev/null while
    it loaded a model, losing what other threads printed meanwhile (almanac init's lines)."""
    stop, printed = threading.Event(), []

    def chatter() -> None:
        while not stop.is_set():
            line = f"line {len(printed)}"
            print(line, flush=True)
            printed.append(line)
            time.sleep(0.005)

    thread = threading.Thread(target=chatter)
    thread.start()
    try:
        LlamaCppLLM(str(embedded_model_path), n_ctx=512)
    finally:
        stop.set()
        thread.join()
    out = capfd.readouterr().out.splitlines()
    assert printed and out == printed
