"""End to end: ``almanac init`` a Spider database (once per session, shared with
test_readiness_e2e: ``initialized_concert``), ``almanac serve`` it as a real uvicorn process
with the real embedded model, ask over HTTP, stream, and give feedback."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.support.postgres import free_port
from tests.support.served import Initialized, run_almanac, served_env

pytestmark = pytest.mark.slow


def test_ask_and_feedback_on_a_real_server_with_the_embedded_model(
    initialized_concert: Initialized, tmp_path: Path
):
    assert "profiled concert_singer" in initialized_concert.output  # `almanac init`, once
    data, url = initialized_concert.copy(tmp_path / "data"), initialized_concert.target_url
    key = run_almanac(data, url, "keys", "create", "--role", "analyst", "--user", "ana")
    headers = {"Authorization": f"Bearer {key.splitlines()[-1]}"}
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        [sys.executable, "-m", "server.cli", "serve", "--port", str(port)],
        env=served_env(data, url),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, process.stdout.read()
            try:
                health = httpx.get(f"{base}/v1/health", timeout=1).json()
                if health.get("status") == "ready":
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the server did not become healthy"
            time.sleep(0.3)
        question = {"question": "How many singers do we have?"}
        answer = httpx.post(f"{base}/v1/ask", json=question, headers=headers, timeout=300)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["rows"] == [[6]] and body["executed"] and body["error"] is None
        with httpx.stream(
            "POST", f"{base}/v1/ask/stream", json=question, headers=headers, timeout=300
        ) as stream:
            events = [
                line.removeprefix("event: ")
                for line in stream.iter_lines()
                if line.startswith("event: ")
            ]
        assert events[0] == "evidence" and events[-2:] == ["vote", "final"]
        feedback = httpx.post(
            f"{base}/v1/answers/{body['id']}/feedback",
            json={"verdict": "correct", "comment": "right"},
            headers=headers,
            timeout=60,
        )
        assert feedback.status_code == 200 and feedback.json()["labeled"]
        metrics = httpx.get(f"{base}/v1/metrics", headers=headers, timeout=10)
        assert metrics.status_code in (200, 403)
    finally:
        process.terminate()
        process.wait(30)
