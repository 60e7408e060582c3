"""HTTP load on a real ``almanac serve`` process over loopback.

    python -m perf.server [--clients 16] [--requests 4000] [--entries 20000]
                                [--scenario search_string --scenario search_facet]
                                [--store-url URL] [--server-cpus 0] [--threads 8]

Fills a fresh store with ``--entries`` schema-like entries (``bench.perf.store.generate``),
creates an API key, starts ``python -m server.cli serve`` as a separate process (uvicorn,
no MiniLM, no job worker, a rate limit high enough not to interfere), then drives it from
``--clients`` concurrent keep-alive connections (one asyncio task each, a minimal HTTP/1.1
client so the load generator costs little CPU) until ``--requests`` requests per scenario
have been answered. Prints throughput and p50/p95/p99 latency per scenario, and errors.

Scenarios are registered in :data:`SCENARIOS` (method, path, a body per request). The ask
endpoint's scenarios (``ask``, ``ask_stream``) are added there next to the knowledge-search
ones when that endpoint exists.

Target: knowledge search >= 300 req/s with p99 <= 50 ms at 16 clients on 2 cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.perf.store import generate, percentile
from kb.store import KnowledgeStore
from server.settings import Settings
from server.state import open_keys
from ukf import BaseUKF

QUESTION_TEMPLATES = (
    "show {phrase} by month",
    "what was the {phrase} last quarter?",
    "compare {phrase} across regions",
)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Scenario:
    """One kind of request: its method and path, and a body maker (seeded per request)."""

    method: str
    path: str
    body: Callable[[random.Random], dict[str, Any]]


@dataclass
class Corpus:
    """What request bodies are drawn from: phrases and table names in the store."""

    phrases: list[str]
    tables: list[str]


def _string_search(corpus: Corpus) -> Scenario:
    def body(rng: random.Random) -> dict[str, Any]:
        question = rng.choice(QUESTION_TEMPLATES).format(phrase=rng.choice(corpus.phrases))
        return {"mode": "string", "query": question, "limit": 20}

    return Scenario("POST", "/v1/knowledge/search", body)


def _facet_search(corpus: Corpus) -> Scenario:
    def body(rng: random.Random) -> dict[str, Any]:
        tag = f"[TABLE:{rng.choice(corpus.tables)}]"
        return {"mode": "facet", "tags": [tag], "type": ["column"], "limit": 20}

    return Scenario("POST", "/v1/knowledge/search", body)


SCENARIOS: dict[str, Callable[[Corpus], Scenario]] = {
    "search_string": _string_search,
    "search_facet": _facet_search,
}


@dataclass
class Measured:
    latencies: list[float] = field(default_factory=list)
    errors: dict[int, int] = field(default_factory=dict)
    seconds: float = 0.0


def _corpus(entries: list[BaseUKF]) -> Corpus:
    phrases = [s for e in entries if e.type in ("column", "enum") for s in e.synonyms]
    tables = [e.name for e in entries if e.type == "table"]
    return Corpus(phrases=phrases, tables=tables)


def _raw_request(method: str, path: str, body: dict[str, Any], key: str, port: int) -> bytes:
    payload = json.dumps(body).encode()
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\n\r\n"
    )
    return head.encode() + payload


async def _exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: bytes) -> int:
    writer.write(raw)
    await writer.drain()
    status = int((await reader.readline()).split()[1])
    length = 0
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    await reader.readexactly(length)
    return status


async def _drive(
    scenario: Scenario, key: str, port: int, clients: int, requests: int, seed: int
) -> Measured:
    measured = Measured()
    remaining = requests

    async def client(index: int) -> None:
        nonlocal remaining
        rng = random.Random(seed * 1000 + index)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            while remaining > 0:
                remaining -= 1
                raw = _raw_request(scenario.method, scenario.path, scenario.body(rng), key, port)
                started = time.perf_counter()
                status = await _exchange(reader, writer, raw)
                measured.latencies.append(time.perf_counter() - started)
                if status != 200:
                    measured.errors[status] = measured.errors.get(status, 0) + 1
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(client(i) for i in range(clients)))
    measured.seconds = time.perf_counter() - started
    return measured


def _fill(store_url: str, data_dir: Path, entries: int, seed: int) -> tuple[Corpus, str]:
    generated = generate(entries, seed)
    with KnowledgeStore(store_url) as store:
        store.upsert_many(generated)
    store, engine, keys = open_keys(Settings(data_dir=data_dir, store_url=store_url))
    try:
        _, secret = keys.create(role="ops", user="bench", label="perf.server")
    finally:
        engine.dispose()
        store.close()
    return _corpus(generated), secret


def _serve(
    data_dir: Path, store_url: str, port: int, cpus: str | None, threads: int
) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ALMANAC_")}
    env.update(
        ALMANAC_DATA_DIR=str(data_dir),
        ALMANAC_STORE_URL=store_url,
        ALMANAC_CONFIG=str(data_dir / "absent.toml"),
        ALMANAC_EMBEDDER="none",
        ALMANAC_LOG_LEVEL="WARNING",
        ALMANAC_JOBS__WORKERS="0",
        ALMANAC_LIMITS__RATE_PER_S="1000000",
        ALMANAC_LIMITS__RATE_BURST="1000000",
        ALMANAC_AUTH_CACHE_S="60",
        ALMANAC_THREADS=str(threads),
    )
    command = [sys.executable, "-m", "server.cli", "serve", "--port", str(port)]
    if cpus:
        command = ["taskset", "-c", cpus, *command]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"almanac serve exited with {process.returncode}")
        try:
            health = httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=1)
            if health.status_code == 200 and health.json()["status"] == "ok":
                return process
        except httpx.TransportError:
            pass
        time.sleep(0.25)
    process.kill()
    raise SystemExit("almanac serve did not become healthy within 120 s")


def _report(name: str, clients: int, measured: Measured) -> str:
    lat = measured.latencies
    rate = len(lat) / measured.seconds if measured.seconds else 0.0
    errors = ", ".join(f"{code}×{n}" for code, n in sorted(measured.errors.items())) or "none"
    return (
        f"{name:<14} {clients:>3} clients  {rate:8.1f} req/s  "
        f"p50 {percentile(lat, 0.5) * 1000:6.2f} ms  p95 {percentile(lat, 0.95) * 1000:6.2f} ms  "
        f"p99 {percentile(lat, 0.99) * 1000:6.2f} ms  (n={len(lat)}, errors: {errors})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=4000, help="per scenario")
    parser.add_argument("--warmup", type=int, default=300, help="per scenario, not measured")
    parser.add_argument("--entries", type=int, default=20_000)
    parser.add_argument("--scenario", action="append", choices=sorted(SCENARIOS))
    parser.add_argument("--store-url", help="default: a fresh SQLite file")
    parser.add_argument("--server-cpus", help="pin the server with taskset, e.g. 0 or 0-1")
    parser.add_argument("--threads", type=int, default=8, help="server handler threads")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="almanac-perf-server-") as tmp:
        data_dir = Path(tmp)
        store_url = args.store_url or f"sqlite:///{data_dir / 'knowledge.db'}"
        corpus, key = _fill(store_url, data_dir, args.entries, args.seed)
        port = free_port()
        server = _serve(data_dir, store_url, port, args.server_cpus, args.threads)
        try:
            print(
                f"almanac serve on :{port} ({args.threads} handler threads), "
                f"{args.entries} entries, store {store_url}"
            )
            for name in args.scenario or sorted(SCENARIOS):
                scenario = SCENARIOS[name](corpus)
                asyncio.run(_drive(scenario, key, port, args.clients, args.warmup, args.seed))
                measured = asyncio.run(
                    _drive(scenario, key, port, args.clients, args.requests, args.seed + 1)
                )
                print(_report(name, args.clients, measured))
        finally:
            server.terminate()
            server.wait(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
