"""``almanac serve`` as a real uvicorn process: serve knowledge, keep queued jobs across a
hard kill, run them after the restart, and stop cleanly on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.support.postgres import free_port
from ukf import KnowledgeUKF

pytestmark = pytest.mark.slow

TIMEOUT_S = 30  # a server starting on a busy machine answers slowly; a timing is not what is tested


def _env(data_dir: Path, workers: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ALMANAC_")}
    env.update(
        ALMANAC_DATA_DIR=str(data_dir),
        ALMANAC_EMBEDDER="none",
        ALMANAC_CONFIG=str(data_dir / "absent.toml"),
        ALMANAC_JOBS__WORKERS=str(workers),
        ALMANAC_JOBS__POLL_S="0.1",
        ALMANAC_JOBS__LEASE_S="1",
    )
    return env


def _start(data_dir: Path, port: int, workers: int) -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, "-m", "server.cli", "serve", "--port", str(port)],
        env=_env(data_dir, workers),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"almanac serve exited: {process.stdout.read()}")
        try:
            health = httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=1)
            if health.status_code == 200 and health.json()["status"] == "ready":
                return process
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    process.kill()
    raise AssertionError("almanac serve did not become healthy within 60 s")


def _create_key(data_dir: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "server.cli", "keys", "create", "--role", "ops", "--user", "olga"],
        env=_env(data_dir, 0),
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip().splitlines()[-1]


def test_serve_restart_and_shutdown(tmp_path):
    key = _create_key(tmp_path)
    headers = {"Authorization": f"Bearer {key}"}
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    first = _start(tmp_path, port, workers=0)  # no worker: submitted jobs stay queued
    try:
        entry = KnowledgeUKF.create("BCR", "budget completion rate", synonyms=["budget completion"])
        created = httpx.post(
            f"{base}/v1/knowledge", json=entry.to_dict(), headers=headers, timeout=TIMEOUT_S
        )
        assert created.status_code == 201
        hits = httpx.post(
            f"{base}/v1/knowledge/search",
            json={"mode": "string", "query": "our budget completion"},
            headers=headers,
            timeout=TIMEOUT_S,
        ).json()["hits"]
        assert [h["id"] for h in hits] == [entry.id]
        job = httpx.post(
            f"{base}/v1/jobs",
            json={"kind": "import", "params": {"jsonl": KnowledgeUKF.create("x", "y").to_json()}},
            headers=headers,
            timeout=TIMEOUT_S,
        ).json()
        assert job["state"] == "queued"
    finally:
        first.kill()  # a crash: no shutdown hooks run
        first.wait(10)

    second = _start(tmp_path, port, workers=1)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            state = httpx.get(
                f"{base}/v1/jobs/{job['id']}", headers=headers, timeout=TIMEOUT_S
            ).json()["state"]
            if state not in ("queued", "running"):
                break
            time.sleep(0.1)
        assert state == "succeeded"
        listed = httpx.get(f"{base}/v1/knowledge", headers=headers, timeout=TIMEOUT_S).json()
        assert listed["count"] == 2
        metrics = httpx.get(f"{base}/v1/metrics", headers=headers, timeout=TIMEOUT_S).text
        assert 'almanac_jobs{state="succeeded"} 1' in metrics
    finally:
        second.send_signal(signal.SIGTERM)
        output, _ = second.communicate(timeout=30)
    # uvicorn shuts down gracefully, then re-raises SIGTERM to exit as the signal asked
    assert second.returncode in (0, -signal.SIGTERM), output
    assert "Application shutdown complete." in output
