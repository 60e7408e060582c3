"""An Almanac server to throw requests at, in this process: :func:`fuzz_server`.

The app runs on uvicorn in a thread on a loopback port (so a crash that resets a keep-alive
connection shows as one), over a fresh SQLite store in a temporary folder, with a small
SQLite target database, an instant scripted OpenAI-compatible model
(:class:`perf.fixtures.InstantOpenAI`), one job worker, and a key for every role (plus an
ops key scoped to a workspace). A few things exist before the first request, so that
generated requests can name them: a knowledge entry, an answer (for feedback) and a job.

:func:`operations` lists every route of the app from its OpenAPI description (and the routes
that read their body themselves), so new routes are covered without changing the fuzzer.
"""

from __future__ import annotations

import logging
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI

from indices.embeddings import HashingEmbedder
from perf.fixtures import InstantOpenAI
from server.app import create_app
from server.settings import JobSettings, LimitSettings, Settings
from server.state import AppState, build_state
from ukf import BaseUKF, KnowledgeUKF

ROLES = ("analyst", "ops", "ml", "admin")
# routes that read a raw body themselves (no requestBody in the OpenAPI description)
RAW_BODY_ROUTES = {("POST", "/v1/knowledge/import"): "application/x-ndjson"}
UKF_BODY_ROUTES = {("POST", "/v1/knowledge"), ("PATCH", "/v1/knowledge/{ukf_id}")}
TARGET_SQL = (
    "CREATE TABLE sales (id INTEGER PRIMARY KEY, region TEXT, amount REAL)",
    "INSERT INTO sales (region, amount) VALUES ('North', 1.5), ('South', 2), ('East', 3)",
)


@dataclass(frozen=True)
class Operation:
    """One route and method, with what its requests may carry."""

    method: str
    path: str
    path_params: tuple[str, ...]
    query: dict[str, dict[str, Any]]  # name → JSON schema
    body: dict[str, Any] | None  # JSON schema, $refs resolved lazily against ``schemas``
    content_type: str = "application/json"
    schemas: dict[str, Any] = field(default_factory=dict)


@dataclass
class FuzzTarget:
    """A running server: its base URL, a key per role, and ids that exist in it."""

    base: str
    state: AppState
    app: FastAPI
    keys: dict[str, str]
    ids: dict[str, list[str]]
    errors: list[logging.LogRecord]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def operations(app: FastAPI) -> list[Operation]:
    """Every (method, path) of ``app`` with its parameters and body schema."""
    spec = app.openapi()
    schemas = spec.get("components", {}).get("schemas", {})
    found = []
    for path, methods in spec["paths"].items():
        for method, op in methods.items():
            params = op.get("parameters", [])
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {})
            key = (method.upper(), path)
            schema = body.get("schema")
            if key in UKF_BODY_ROUTES:
                schema = _ukf_schema()
            found.append(
                Operation(
                    method=method.upper(),
                    path=path,
                    path_params=tuple(p["name"] for p in params if p["in"] == "path"),
                    query={p["name"]: p.get("schema", {}) for p in params if p["in"] == "query"},
                    body=_ukf_schema() if key in RAW_BODY_ROUTES else schema,
                    content_type=RAW_BODY_ROUTES.get(key, "application/json"),
                    schemas={**schemas, **_ukf_schema().get("$defs", {})},
                )
            )
    return found


def _ukf_schema() -> dict[str, Any]:
    return BaseUKF.model_json_schema(ref_template="#/components/schemas/{model}")


class _Collect(logging.Handler):
    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__(logging.ERROR)
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _target(path: Path) -> str:
    import sqlite3

    with sqlite3.connect(path) as conn:
        for statement in TARGET_SQL:
            conn.execute(statement)
    return f"sqlite:///{path}"


def _settings(data_dir: Path, llm_port: int) -> Settings:
    tier = {
        "name": "default",
        "backend": "openai",
        "model": "instant",
        "base_url": f"http://127.0.0.1:{llm_port}/v1",
        "timeout_s": 5,
        "retries": 0,
    }
    return Settings(
        data_dir=data_dir,
        store_url=f"sqlite:///{data_dir / 'knowledge.db'}",
        api_key_pepper="fuzz-pepper-0123456789abcdef",
        embedder="none",
        auth_cache_s=30,
        index_refresh_s=0.5,
        warm_on_start=False,
        target_url=_target(data_dir / "sales.sqlite"),
        target_name="sales",
        llm_tiers=[tier],
        jobs=JobSettings(poll_s=0.2, lease_s=30.0),
        limits=LimitSettings(rate_per_s=1e6, rate_burst=1_000_000, request_timeout_s=30.0),
    )


@contextmanager
def fuzz_server(data_dir: Path | None = None) -> Iterator[FuzzTarget]:
    """Start the server (see the module's docstring); stop it and the scripted model after."""
    model = ThreadingHTTPServer(("127.0.0.1", 0), InstantOpenAI)
    threading.Thread(target=model.serve_forever, daemon=True).start()
    errors: list[logging.LogRecord] = []
    collect = _Collect(errors)
    logging.getLogger().addHandler(collect)
    with tempfile.TemporaryDirectory(prefix="almanac-fuzz-") as tmp:
        settings = _settings(data_dir or Path(tmp), model.server_port)
        state = build_state(settings, embedder=HashingEmbedder())
        app = create_app(state)
        port = free_port()
        config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        try:
            _wait_started(server)
            assert state.indices.wait_ready(60), "the indices did not load"
            keys = {role: state.keys.create(role=role, user=role)[1] for role in ROLES}
            keys["ops@ws"] = state.keys.create(role="ops", user="wsops", workspace="ws1")[1]
            victim = state.keys.create(role="analyst", user="victim")[0].id  # to revoke
            base = f"http://127.0.0.1:{port}"
            ids = {**_seed(base, keys), "key_id": [victim]}
            target = FuzzTarget(base, state, app, keys, ids, errors)
            yield target
        finally:
            server.should_exit = True
            thread.join(60)
            model.shutdown()
            logging.getLogger().removeHandler(collect)


def _wait_started(server: uvicorn.Server) -> None:
    deadline = time.monotonic() + 60
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start within 60 s")
        time.sleep(0.05)


def _seed(base: str, keys: dict[str, str]) -> dict[str, list[str]]:
    """Things that exist before the first generated request, by path parameter name."""
    with httpx.Client(base_url=base, timeout=60) as client:
        admin = {"Authorization": f"Bearer {keys['admin']}"}
        entry = KnowledgeUKF.create("fuzz", "an entry the fuzzer may name", synonyms=["fz"])
        created = client.post("/v1/knowledge", json=entry.to_dict(), headers=admin)
        answer = client.post("/v1/ask", json={"question": "sales by region"}, headers=admin)
        job = client.post("/v1/jobs", json={"kind": "reindex"}, headers=admin)
    ids: dict[str, list[str]] = {
        "ukf_id": [created.json()["id"]] if created.status_code == 201 else [],
        "answer_id": [answer.json()["id"]] if answer.status_code == 200 else [],
        "job_id": [job.json()["id"]] if job.status_code == 202 else [],
    }
    return ids
