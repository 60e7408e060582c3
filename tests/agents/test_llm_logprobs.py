"""Token log probabilities: computed from logits, recorded during a generation, asked of an
OpenAI-compatible server (and not asked again of one that refuses them)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import numpy as np
import pytest

from agents.llm.base import LLMError
from agents.llm.logprobs import TokenLogprobs, summary, token_logprob
from agents.llm.openai_compat import OpenAICompatibleLLM

ASK = [{"role": "user", "content": "Count the rows of table orders."}]


def test_a_token_logprob_is_the_log_softmax_at_the_token_even_for_huge_logits():
    logits = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    expected = np.log(np.exp(logits) / np.exp(logits).sum())
    assert [token_logprob(logits, t) for t in range(3)] == pytest.approx(expected.tolist())
    huge = np.array([1000.0, 1000.0, -1000.0], dtype=np.float32)  # exp() would overflow
    assert token_logprob(huge, 0) == pytest.approx(np.log(0.5))
    assert token_logprob(huge, 2) == pytest.approx(-2000.0 - np.log(2.0))


def test_a_generation_records_its_sampled_tokens_and_never_its_prompt():
    logits = {"now": np.array([0.0, 0.0, 0.0, 0.0])}  # uniform: each token has log(1/4)
    sink = TokenLogprobs(lambda: logits["now"])
    sink.before_eval([7])  # the prompt, here what is left of it after a reused prefix: one token
    assert sink.result() is None
    sink.before_eval([1])
    logits["now"] = np.array([0.0, 10.0, 0.0, 0.0])
    sink.before_eval([1])
    sink.before_eval([2, 3])  # not a sampled token (a draft model's batch): nothing recorded
    assert sink.result() == pytest.approx((np.log(0.25), token_logprob(logits["now"], 1)))
    empty = TokenLogprobs(lambda: logits["now"])
    empty.before_eval([1, 2, 3])
    assert empty.result() is None


def test_summary_is_the_mean_and_the_least():
    assert summary((-0.5, -1.5, 0.0)) == (pytest.approx(-2 / 3), -1.5)
    assert summary(None) == (None, None) and summary(()) == (None, None)


class _Server(BaseHTTPRequestHandler):
    """An OpenAI-compatible server that sends log probabilities, omits them, or refuses the
    parameter (400, as some servers do)."""

    mode: ClassVar[str] = "logprobs"
    bodies: ClassVar[list[dict]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.bodies.append(body)
        if self.mode == "bad":
            self._send(400, {"error": {"message": "max_tokens is too large"}})
            return
        if self.mode == "refuse" and "logprobs" in body:
            self._send(400, {"error": {"message": "Unsupported parameter: 'logprobs'"}})
            return
        choice = {
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": "SELECT 1"},
        }
        if self.mode == "logprobs" and body.get("logprobs"):
            tokens = [("SELECT", -0.01), (" ", -0.5), ("1", -2.0)]
            content = [
                {"token": t, "logprob": p, "bytes": None, "top_logprobs": []} for t, p in tokens
            ]
            choice["logprobs"] = {"content": content}
        self._send(
            200,
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [choice],
            },
        )

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_args: object) -> None:
        return


@pytest.fixture()
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    _Server.mode, _Server.bodies = "logprobs", []
    yield f"http://127.0.0.1:{httpd.server_port}/v1"
    httpd.shutdown()


def test_an_openai_compatible_server_is_asked_for_logprobs_and_they_are_kept(server):
    result = OpenAICompatibleLLM(server, "m").chat(ASK)
    assert _Server.bodies[-1]["logprobs"] is True
    assert result.text == "SELECT 1" and result.completions[0].logprobs == (-0.01, -0.5, -2.0)
    _Server.mode = "silent"  # takes the parameter, sends none
    assert OpenAICompatibleLLM(server, "m").chat(ASK).completions[0].logprobs is None


def test_a_server_refusing_logprobs_still_answers_and_is_not_asked_again(server):
    _Server.mode = "refuse"
    llm = OpenAICompatibleLLM(server, "m")
    first = llm.chat(ASK)
    assert first.text == "SELECT 1" and first.completions[0].logprobs is None
    assert ["logprobs" in body for body in _Server.bodies] == [True, False]
    assert llm.chat(ASK).text == "SELECT 1"
    assert ["logprobs" in body for body in _Server.bodies] == [True, False, False]
    assert OpenAICompatibleLLM(server, "m").ask_logprobs  # remembered per instance


def test_another_bad_request_is_an_error_and_logprobs_are_still_asked(server):
    _Server.mode = "bad"
    llm = OpenAICompatibleLLM(server, "m")
    with pytest.raises(LLMError, match="max_tokens"):
        llm.chat(ASK)
    assert len(_Server.bodies) == 1 and llm.ask_logprobs
