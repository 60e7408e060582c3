"""Two ``almanac serve`` replicas on one knowledge store, as real processes: the processes, their
environment, the keys made before they start, and bounded polls (used by
``tests/server/test_replicas.py``)."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx

from kb.engine import create_store_engine
from kb.store import KnowledgeStore
from server.keys import KeyStore
from tests.support.postgres import free_port

PEPPER = "replica-test-pepper-0123456789abcdef"
REFRESH_S = 0.5  # ALMANAC_INDEX_REFRESH_S
AUTH_CACHE_S = 1.0  # ALMANAC_AUTH_CACHE_S
LEASE_S = 2.0  # ALMANAC_JOBS__LEASE_S
POLL_S = 0.1  # ALMANAC_JOBS__POLL_S
# What an HTTP round trip and a thread switch may add on a busy two-core test machine; the
# bounds below are "the configured interval plus this", never a fixed sleep.
SLACK_S = 3.0
TARGET_TABLES, TARGET_ROWS = 10, 50_000  # profiling takes a few seconds: long enough to kill
HTTP_TIMEOUT_S = 30
T = TypeVar("T")


def wait_for(what: str, probe: Callable[[], tuple[bool, T]], timeout_s: float) -> T:
    """Poll ``probe`` (→ ``(done, observed)``) until done; fail saying what it saw last."""
    deadline = time.monotonic() + timeout_s
    while True:
        done, observed = probe()
        if done:
            return observed
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout_s:g} s; last seen: {observed!r}")
        time.sleep(0.05)


def make_target(path: Path) -> str:
    """A SQLite target whose profile takes seconds: tables of 50,000 generated rows."""
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        for i in range(TARGET_TABLES):
            conn.execute(
                f"CREATE TABLE t{i} (id INTEGER PRIMARY KEY, a INTEGER, b TEXT, c REAL, d TEXT)"
            )
            conn.execute(
                f"INSERT INTO t{i} WITH RECURSIVE r(x) AS "
                f"(SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE x < {TARGET_ROWS}) "
                "SELECT x, x % 97, 'v' || (x % 31), x * 0.5, 'free text number ' || x FROM r"
            )
    return f"sqlite:///{path}"


def replica_env(data_dir: Path, store_url: str, target_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ALMANAC_")}
    env.update(
        ALMANAC_DATA_DIR=str(data_dir),
        ALMANAC_CONFIG=str(data_dir / "absent.toml"),
        ALMANAC_STORE_URL=store_url,
        ALMANAC_API_KEY_PEPPER=PEPPER,
        ALMANAC_TARGET_URL=target_url,
        ALMANAC_TARGET_NAME="big",
        ALMANAC_EMBEDDER="none",
        ALMANAC_WARM_ON_START="false",
        ALMANAC_INDEX_REFRESH_S=str(REFRESH_S),
        ALMANAC_AUTH_CACHE_S=str(AUTH_CACHE_S),
        ALMANAC_LIMITS__RATE_PER_S="1000",
        ALMANAC_LIMITS__RATE_BURST="1000",
        ALMANAC_JOBS__WORKERS="2",
        ALMANAC_JOBS__POLL_S=str(POLL_S),
        ALMANAC_JOBS__LEASE_S=str(LEASE_S),
    )
    return env


@dataclass
class Replica:
    """One ``almanac serve`` process; its output goes to a file (a pipe could fill up)."""

    name: str
    port: int
    env: dict[str, str]
    log_path: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def start(self) -> None:
        with self.log_path.open("wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "server.cli", "serve", "--port", str(self.port)],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def output(self, chars: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]

    def wait_healthy(self, timeout_s: float = 90) -> None:
        def healthy() -> tuple[bool, Any]:
            assert self.process is not None
            if self.process.poll() is not None:
                raise AssertionError(f"replica {self.name} exited:\n{self.output()}")
            try:
                reply = httpx.get(f"{self.base}/v1/health", timeout=2)
            except httpx.TransportError as exc:
                return False, repr(exc)
            return reply.status_code == 200 and reply.json().get("status") == "ready", reply.text

        wait_for(f"replica {self.name} healthy", healthy, timeout_s)

    def kill(self) -> None:
        """SIGKILL: no shutdown hook runs, the running job keeps its (stale) lease."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)

    def request(self, method: str, path: str, key: str, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {key}"}
        return httpx.request(
            method, f"{self.base}{path}", headers=headers, timeout=HTTP_TIMEOUT_S, **kwargs
        )

    def ok(self, method: str, path: str, key: str, **kwargs: Any) -> Any:
        reply = self.request(method, path, key, **kwargs)
        assert reply.status_code < 300, f"{self.name}: {method} {path}: {reply.text}"
        return reply.json()


@dataclass
class Pair:
    a: Replica
    b: Replica
    store_url: str
    keys: dict[str, tuple[str, str]] = field(default_factory=dict)  # role → (id, secret)

    def key(self, role: str) -> str:
        return self.keys[role][1]

    def replica_of(self, worker_id: str | None) -> Replica | None:
        """The replica whose process runs ``worker_id`` (``host:pid:suffix``)."""
        pid = int(worker_id.split(":")[1]) if worker_id else None
        return next((r for r in (self.a, self.b) if r.pid == pid), None)


def two_ports() -> tuple[int, int]:
    first = free_port()
    second = free_port()
    while second == first:
        second = free_port()
    return first, second


def cli_key(env: dict[str, str], role: str, user: str) -> tuple[str, str]:
    """``almanac keys create`` against the shared store: (key id, secret)."""
    done = subprocess.run(
        [sys.executable, "-m", "server.cli", "keys", "create", "--role", role, "--user", user],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    secret = done.stdout.strip().splitlines()[-1]
    return secret.split("_")[1], secret


@contextlib.contextmanager
def started_pair(store_url: str, root: Path, target_url: str) -> Iterator[Pair]:
    """Keys made before the start (CLI and KeyStore), then two replicas on one store."""
    port_a, port_b = two_ports()
    replicas = []
    for name, port in (("A", port_a), ("B", port_b)):
        data_dir = root / name
        data_dir.mkdir()
        env = replica_env(data_dir, store_url, target_url)
        replicas.append(Replica(name, port, env, root / f"{name}.log"))
    pair = Pair(*replicas, store_url)
    pair.keys["admin"] = cli_key(pair.a.env, "admin", "root")  # also migrates the store
    with KnowledgeStore(store_url):
        engine = create_store_engine(store_url)
        try:
            store_keys = KeyStore(engine, PEPPER.encode())
            for role, user in (("ops", "olga"), ("analyst", "ana")):
                key, secret = store_keys.create(role=role, user=user)
                pair.keys[role] = (key.id, secret)
        finally:
            engine.dispose()
    try:
        for replica in replicas:
            replica.start()
        for replica in replicas:
            replica.wait_healthy()
        yield pair
    finally:
        for replica in replicas:
            replica.stop()


def job_of(replica: Replica, key: str, job_id: str) -> dict[str, Any]:
    return replica.ok("GET", f"/v1/jobs/{job_id}?log_lines=1000", key)


def lines(job: dict[str, Any], fragment: str) -> list[str]:
    return [entry["line"] for entry in job["log"] if fragment in entry["line"]]


def audit_of_job(replica: Replica, key: str, job_id: str) -> list[dict[str, Any]]:
    items = replica.ok("GET", "/v1/audit?limit=1000", key)["items"]
    return [item for item in items if item["job_id"] == job_id]
