"""A real ``almanac serve`` for the page benchmark: Spider's concert_singer, an instant model.

:func:`concert_server` is what the browser tests' ``live`` fixture serves (concert_singer
profiled into a fresh SQLite store, every question answered at once with
:data:`CONCERT_SQL`, no abstention), but run as its own process, as a user runs it, so the
server never shares this process (and its GIL) with the browser driver that measures it.
The model is :class:`perf.fixtures.InstantOpenAI` with the concert_singer SQL as its reply.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path
from threading import Thread

import httpx

from bench.datasets.registry import default_data_root
from kb.profile.profiler import ProfileOptions, profile_database
from kb.store import KnowledgeStore
from kb.target.database import Database
from perf.fixtures import InstantOpenAI, ask_env
from perf.http_load import free_port
from server.settings import Settings
from server.state import open_keys

DATABASE = "concert_singer"
CONCERT_SQL = "SELECT country, COUNT(*) AS singers FROM singer GROUP BY country ORDER BY country"
START_TIMEOUT_S = 120.0


class ConcertOpenAI(InstantOpenAI):
    """Every chat completion answered at once with :data:`CONCERT_SQL`."""

    reply = f"```sql\n-- Tables: singer\n-- Reasoning: scripted for perf.page\n{CONCERT_SQL}\n```"


@dataclass(frozen=True)
class PageServer:
    """A running server: its base URL and an analyst's API key."""

    url: str
    key: str


def concert_path() -> Path:
    """The concert_singer SQLite file of Spider's dev set (a clear error when it is missing)."""
    path = default_data_root() / "spider_dev" / "database" / DATABASE / f"{DATABASE}.sqlite"
    if not path.is_file():
        raise SystemExit(f"Spider's {DATABASE} database is not at {path}")
    return path


def _prepare(data_dir: Path, store_url: str, target_url: str) -> str:
    """Profile the target into the store; returns a new analyst key."""
    with KnowledgeStore(store_url) as store, Database(target_url) as database:
        profile_database(
            database, store, database_name=DATABASE, options=ProfileOptions(progress=False)
        )
    store, engine, keys = open_keys(Settings(data_dir=data_dir, store_url=store_url))
    try:
        _, secret = keys.create(role="analyst", user="page-bench", label="perf.page")
    finally:
        engine.dispose()
        store.close()
    return secret


def _wait_ready(process: subprocess.Popen, url: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"almanac serve exited with {process.returncode}")
        try:
            health = httpx.get(f"{url}/v1/health", timeout=1)
            if health.status_code == 200 and health.json()["status"] == "ready":
                return
        except (httpx.TransportError, ValueError, KeyError):
            pass
        time.sleep(0.25)
    raise SystemExit(f"almanac serve did not become ready within {START_TIMEOUT_S:.0f} s")


@contextmanager
def concert_server() -> Iterator[PageServer]:
    """Start ``almanac serve`` over concert_singer with the instant model; stop it after."""
    llm = ThreadingHTTPServer(("127.0.0.1", 0), ConcertOpenAI)
    Thread(target=llm.serve_forever, daemon=True).start()
    process: subprocess.Popen | None = None
    try:
        with tempfile.TemporaryDirectory(prefix="almanac-page-") as folder:
            data_dir = Path(folder)
            store_url = f"sqlite:///{data_dir / 'knowledge.db'}"
            target_url = f"sqlite:///{concert_path()}"
            key = _prepare(data_dir, store_url, target_url)
            port = free_port()
            env = {k: v for k, v in os.environ.items() if not k.startswith("ALMANAC_")}
            env.update(ask_env(target_url, llm.server_port, concurrency=4, target_timeout=10))
            env.update(
                ALMANAC_TARGET_NAME=DATABASE,
                ALMANAC_DATA_DIR=str(data_dir),
                ALMANAC_STORE_URL=store_url,
                ALMANAC_CONFIG=str(data_dir / "absent.toml"),
                ALMANAC_EMBEDDER="none",
                ALMANAC_LOG_LEVEL="WARNING",
                ALMANAC_JOBS__WORKERS="0",
                ALMANAC_LIMITS__RATE_PER_S="1000000",
                ALMANAC_LIMITS__RATE_BURST="1000000",
                ALMANAC_WARM_ON_START="false",
                # a scripted model's vote says nothing: answers keep their rows, one sample
                ALMANAC_CONFIDENCE__ABSTAIN_BELOW="0",
                ALMANAC_CONFIDENCE__ADAPTIVE="false",
            )
            command = [sys.executable, "-m", "server.cli", "serve", "--port", str(port)]
            process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
            url = f"http://127.0.0.1:{port}"
            _wait_ready(process, url)
            try:
                yield PageServer(url=url, key=key)
            finally:
                process.terminate()
                process.wait(30)
    finally:
        if process is not None and process.poll() is None:
            process.kill()
        llm.shutdown()
