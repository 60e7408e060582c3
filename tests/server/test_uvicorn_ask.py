"""End to end: ``almanac init`` a Spider database, ``almanac serve`` it as a real uvicorn
process with the real embedded model, ask over HTTP, stream, and give feedback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from agents.llm.models import TEST_MODEL
from tests.agents.conftest import spider_path
from tests.support.postgres import free_port

pytestmark = pytest.mark.slow


def _env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ALMANAC_")}
    env.update(
        ALMANAC_DATA_DIR=str(data_dir),
        ALMANAC_CONFIG=str(data_dir / "absent.toml"),
        ALMANAC_EMBEDDER="minilm",
        ALMANAC_LLM_TIERS=json.dumps([{"name": "default", "model": TEST_MODEL, "n_threads": 2}]),
        ALMANAC_TARGET_URL=f"sqlite:///{spider_path('concert_singer')}",
        ALMANAC_TARGET_NAME="concert_singer",
    )
    return env


def _cli(data_dir: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "server.cli", *args],
        env=_env(data_dir),
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def test_ask_and_feedback_on_a_real_server_with_the_embedded_model(tmp_path):
    url = f"sqlite:///{spider_path('concert_singer')}"
    assert "profiled concert_singer" in _cli(tmp_path, "init", "--db", url)
    key = _cli(tmp_path, "keys", "create", "--role", "analyst", "--user", "ana").splitlines()[-1]
    headers = {"Authorization": f"Bearer {key}"}
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        [sys.executable, "-m", "server.cli", "serve", "--port", str(port)],
        env=_env(tmp_path),
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
