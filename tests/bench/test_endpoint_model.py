"""The benchmark's model can be one an OpenAI-compatible server serves (``openai:NAME@URL``):
how the vLLM-served student was measured."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from agents.llm.openai_compat import OpenAICompatibleLLM
from bench.agent_workspace import ModelChoice, load_llm


class _Served(BaseHTTPRequestHandler):
    bodies: ClassVar[list[dict]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Served.bodies.append(body)
        reply = {
            "id": "1",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "SELECT count(*) FROM singer\n"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 7, "completion_tokens": 6, "total_tokens": 13},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def served() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Served)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Served.bodies = []
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()


def test_an_endpoint_model_is_asked_by_name_with_the_reply_prefilled(served):
    llm = load_llm(f"openai:student@{served}", ModelChoice())
    assert isinstance(llm, OpenAICompatibleLLM) and llm.model == "student"
    assert load_llm(f"openai:student@{served}", ModelChoice()) is llm  # loaded once
    reply = llm.chat([{"role": "user", "content": "How many singers?"}], reply_prefix="```sql\n")
    assert reply.text == "```sql\nSELECT count(*) FROM singer\n"
    sent = _Served.bodies[-1]
    assert sent["model"] == "student"
    assert sent["messages"][-1] == {"role": "assistant", "content": "```sql\n"}


@pytest.mark.parametrize(
    "spec", ["openai:student", "openai:@http://h/v1", "openai:student@localhost:8000/v1"]
)
def test_a_malformed_endpoint_spec_is_refused_with_the_form_expected(spec):
    with pytest.raises(ValueError, match="openai:NAME@http"):
        load_llm(spec, ModelChoice())
