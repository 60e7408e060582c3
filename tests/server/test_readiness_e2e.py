"""End to end: ``almanac serve`` as a real uvicorn process with the real embedded model (the
test profile's, ``TEST_MODEL``, as ``tests.support.served`` configures it), over the session's
``almanac init`` of concert_singer (``initialized_concert``). A question asked the moment the
port answers, during the warm-up, waits for it and is answered (not 503); /v1/health goes from
starting or warming to ready, and serve prints a line per component and one when it is ready."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.postgres import free_port
from tests.support.served import Initialized, run_almanac, served_env

pytestmark = pytest.mark.slow
WARM_UP_S = 300  # the model's load and prefill on a loaded 2-core machine


def _health(base: str, headers: dict[str, str]) -> dict[str, Any] | None:
    try:
        return httpx.get(f"{base}/v1/health", headers=headers, timeout=5).json()
    except httpx.TransportError:
        return None


def test_a_question_asked_during_the_warm_up_is_answered_and_health_turns_ready(
    initialized_concert: Initialized, tmp_path: Path
):
    assert "profiled concert_singer" in initialized_concert.output  # `almanac init`, once
    data, url = initialized_concert.copy(tmp_path / "data"), initialized_concert.target_url
    created = {
        role: run_almanac(data, url, "keys", "create", "--role", role, "--user", role)
        for role in ("analyst", "ops")
    }
    keys = {role: printed.splitlines()[-1] for role, printed in created.items()}
    asker = {"Authorization": f"Bearer {keys['analyst']}"}
    watcher = {"Authorization": f"Bearer {keys['ops']}"}  # ops may see the health details
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        [sys.executable, "-m", "server.cli", "serve", "--port", str(port)],
        env=served_env(data, url),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    output: list[str] = []
    reading = threading.Thread(target=lambda: output.extend(process.stdout), daemon=True)
    reading.start()
    pool = ThreadPoolExecutor(1)
    try:
        deadline = time.monotonic() + WARM_UP_S
        while (first := _health(base, watcher)) is None:
            assert process.poll() is None, "".join(output)
            assert time.monotonic() < deadline, "the server never answered"
            time.sleep(0.05)
        question = {"question": "How many singers do we have?"}
        asked = pool.submit(
            httpx.post, f"{base}/v1/ask", json=question, headers=asker, timeout=WARM_UP_S
        )
        seen = [first]
        while seen[-1]["status"] != "ready":
            assert seen[-1]["status"] in ("starting", "warming"), seen[-1]
            assert time.monotonic() < deadline, seen[-1]
            time.sleep(0.2)
            seen.append(_health(base, watcher))
        answer = asked.result(WARM_UP_S)
        assert answer.status_code == 200, answer.text
        assert answer.json()["rows"] == [[6]]
        assert first["status"] in ("starting", "warming"), first
        ready = seen[-1]["components"]
        assert set(ready) == {"indices", "model:default", "prefill"}
        assert {c["state"] for c in ready.values()} == {"ready"}, ready
        assert httpx.get(f"{base}/v1/health", timeout=5).json() == {"status": "ready"}
        while not any(line.startswith("Almanac is ready on") for line in output):
            assert time.monotonic() < deadline and process.poll() is None, "".join(output)
            time.sleep(0.05)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        process.terminate()
        process.wait(30)
        reading.join(10)
    printed = "".join(output)
    assert "Almanac is warming up: indices, model default, prompt prefill" in printed, printed
    assert "Almanac: model default loaded (" in printed
    assert "Almanac: prompt prefill done (" in printed
    assert (
        f"Almanac is ready on http://127.0.0.1:{port} (indices, models and prompt prefill warm"
        in (printed)
    )
