"""HTTP load on a real ``almanac serve`` process over loopback.

    python -m perf.server [--clients 16] [--requests 4000] [--entries 20000]
                                [--scenario search_string --scenario search_facet]
                                [--store-url URL] [--server-cpus 0] [--threads 8]
                                [--flood N] [--target-timeout 10]

Fills a fresh store with ``--entries`` schema-like entries (``bench.perf.store.generate``),
creates an API key, starts ``python -m server.cli serve`` as a separate process (uvicorn,
no MiniLM, no job worker, a rate limit high enough not to interfere), then drives it from
``--clients`` concurrent keep-alive connections (one asyncio task each, a minimal HTTP/1.1
client so the load generator costs little CPU) until ``--requests`` requests per scenario
have been answered. Prints throughput and p50/p95/p99 latency per scenario, and errors.

Scenarios are registered in :data:`SCENARIOS` (method, path, a body per request). The ask
endpoint's scenarios (``ask``, ``ask_stream``) are added there next to the knowledge-search
ones when that endpoint exists.

``--flood N`` (issue 20): the server also gets a small SQLite target and an instant scripted
OpenAI-compatible LLM tier (``perf.fixtures``, as ``perf.server_ask`` has them; the target's
time limit is ``--target-timeout`` seconds), and a second key, an analyst's, floods it with slow
corrected SQL (``perf.sql_flood.flood``: N concurrent feedbacks whose recursive CTE runs until
that limit, each 429 retried after its ``Retry-After``). Every scenario then runs twice with the
same requests: without the flood, then with it (started a second before, stopped after). The
report adds the flood's statuses, checks that every feedback it got 200 for was stored and
audited, and gives each scenario's p99 with the flood against its p99 without (issue 20 wants
it within 3x). Exits 1 when anything answered 500 or a feedback answered 200 was not stored.

Target: knowledge search >= 300 req/s with p99 <= 50 ms at 16 clients on 2 cores.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.perf.store import generate
from kb.store import KnowledgeStore
from perf.fixtures import ask_env, instant_llm, profile_target, sales_target
from perf.http_load import Scenario, drive, free_port, report_line
from perf.server_flood import report_flood, run_flooded
from server.settings import Settings
from server.state import open_keys
from ukf import BaseUKF

QUESTION_TEMPLATES = (
    "show {phrase} by month",
    "what was the {phrase} last quarter?",
    "compare {phrase} across regions",
)


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


def _corpus(entries: list[BaseUKF]) -> Corpus:
    phrases = [s for e in entries if e.type in ("column", "enum") for s in e.synonyms]
    tables = [e.name for e in entries if e.type == "table"]
    return Corpus(phrases=phrases, tables=tables)


def _fill(
    store_url: str, data_dir: Path, entries: int, seed: int, target: str | None = None
) -> tuple[Corpus, str, str | None]:
    """Fill the store; the ops key for the scenarios, and (with a ``target``, profiled into
    the store) an analyst key for the flood."""
    generated = generate(entries, seed)
    with KnowledgeStore(store_url) as store:
        store.upsert_many(generated)
        if target is not None:
            profile_target(store, target)
    store, engine, keys = open_keys(Settings(data_dir=data_dir, store_url=store_url))
    try:
        _, secret = keys.create(role="ops", user="bench", label="perf.server")
        flooder = None
        if target is not None:
            _, flooder = keys.create(role="analyst", user="flood", label="perf.server flood")
    finally:
        engine.dispose()
        store.close()
    return _corpus(generated), secret, flooder


def _serve(
    data_dir: Path,
    store_url: str,
    port: int,
    cpus: str | None,
    threads: int,
    extra_env: dict[str, str] | None = None,
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
    env.update(extra_env or {})
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
            if health.status_code == 200 and health.json()["status"] == "ready":
                return process
        except httpx.TransportError:
            pass
        time.sleep(0.25)
    process.kill()
    raise SystemExit("almanac serve did not become healthy within 120 s")


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
    parser.add_argument(
        "--flood",
        type=int,
        default=0,
        metavar="N",
        help="run each scenario again while N concurrent feedbacks post slow corrected SQL",
    )
    parser.add_argument(
        "--target-timeout", type=float, default=10.0, help="the target's time limit (--flood)"
    )
    args = parser.parse_args(argv)
    llm = instant_llm() if args.flood else None
    failed = False
    with tempfile.TemporaryDirectory(prefix="almanac-perf-server-") as tmp:
        data_dir = Path(tmp)
        store_url = args.store_url or f"sqlite:///{data_dir / 'knowledge.db'}"
        target = sales_target(data_dir / "sales.sqlite") if llm is not None else None
        corpus, key, flood_key = _fill(store_url, data_dir, args.entries, args.seed, target)
        extra_env = None
        if llm is not None and target is not None:  # the flood's asks and corrected SQL
            extra_env = ask_env(
                target, llm.server_port, concurrency=4, target_timeout=args.target_timeout
            )
        port = free_port()
        server = _serve(data_dir, store_url, port, args.server_cpus, args.threads, extra_env)
        try:
            print(
                f"almanac serve on :{port} ({args.threads} handler threads), "
                f"{args.entries} entries, store {store_url}"
            )
            if flood_key is not None:
                print(
                    f"flood: {args.flood} concurrent feedbacks from a second key, each with "
                    "a recursive CTE that runs until the target's limit "
                    f"({args.target_timeout:g} s); an instant scripted LLM tier"
                )
            for name in args.scenario or sorted(SCENARIOS):
                scenario = SCENARIOS[name](corpus)
                asyncio.run(drive(scenario, key, port, args.clients, args.warmup, args.seed))
                measured = asyncio.run(
                    drive(scenario, key, port, args.clients, args.requests, args.seed + 1)
                )
                failed |= measured.errors.get(500, 0) > 0
                if flood_key is None:
                    print(report_line(name, args.clients, measured))
                    continue
                flooded = run_flooded(scenario, key, port, args, flood_key, data_dir, store_url)
                for line in report_flood(name, args.clients, args.flood, measured, flooded):
                    print(line, flush=True)
                failed |= flooded.fivehundreds > 0 or flooded.lost != 0
        finally:
            server.terminate()
            server.wait(30)
            if llm is not None:
                llm.shutdown()
    if failed:
        print("FAILED: an answer was 500 or a feedback answered 200 was not stored")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
