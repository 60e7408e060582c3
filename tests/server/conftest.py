"""Fixtures for the HTTP server: settings, a running app over a real store, keys per role,
a small target database (SQLite or PostgreSQL), and scripted describers."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from indices.embeddings import HashingEmbedder
from kb.profile.model import ColumnProfile, Description, TableProfile
from server.app import create_app
from server.settings import JobSettings, LimitSettings, Settings
from server.settings_confidence import ConfidenceSettings
from server.state import AppState, build_state
from tests.support.prebuilt import shared_session_build
from tests.support.served import Initialized, init_data_dir

PEPPER = "test-pepper-0123456789abcdef"
ROLES = ("analyst", "ops", "ml", "admin")
TARGET_SQL = (
    "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, region TEXT)",
    "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id),"
    " amount NUMERIC, status TEXT)",
    "INSERT INTO customers VALUES (1, 'Ada', 'North'), (2, 'Bo', 'South'), (3, 'Cy', 'North')",
    "INSERT INTO orders VALUES (1, 1, 10.5, 'paid'), (2, 1, 20, 'open'), (3, 2, 7, 'paid'),"
    " (4, 3, 12, 'void')",
)


def make_settings(tmp_path: Path, store_url: str, **overrides: Any) -> Settings:
    """Settings for tests: no LLM, no MiniLM, no warming, fast polling, a fixed pepper."""
    jobs = overrides.pop("jobs", {})
    limits = overrides.pop("limits", {})
    # scripted answers keep their rows and draw one sample unless a test asks for abstention
    # or adaptive sampling: their confidence says nothing about a scripted model
    confidence = {"abstain_below": 0.0, "adaptive": False, **overrides.pop("confidence", {})}
    return Settings(
        data_dir=tmp_path,
        store_url=store_url,
        api_key_pepper=PEPPER,
        embedder="none",
        auth_cache_s=0,
        index_refresh_s=0.1,
        # no background cot job after feedback unless a test asks for one: its calls would
        # share the scripted LLM with the test's asks
        jobs=JobSettings(**{"poll_s": 0.05, "lease_s": 30.0, "cot_after_feedback": False, **jobs}),
        limits=LimitSettings(**limits),
        confidence=ConfidenceSettings(**confidence),
        **{"warm_on_start": False, **overrides},
    )


class Server:
    """A started app over a real store, with a key per role."""

    def __init__(self, state: AppState, client: TestClient) -> None:
        self.state, self.client = state, client
        self.keys: dict[str, str] = {}

    def key(self, role: str, user: str | None = None, **fields: Any) -> str:
        _, secret = self.state.keys.create(role=role, user=user or role, **fields)
        return secret

    def headers(self, role_or_key: str) -> dict[str, str]:
        key = self.keys.get(role_or_key, role_or_key)
        return {"Authorization": f"Bearer {key}"}

    def request(self, method: str, path: str, as_: str | None = None, **kwargs: Any) -> Any:
        headers = {**(self.headers(as_) if as_ else {}), **kwargs.pop("headers", {})}
        return self.client.request(method, path, headers=headers, **kwargs)

    def wait_job(self, job_id: str, as_: str = "ops", timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            job = self.request("GET", f"/v1/jobs/{job_id}", as_).json()
            if job["state"] not in ("queued", "running") or time.monotonic() > deadline:
                return job
            time.sleep(0.05)


@contextmanager
def running_server(state: AppState, *, close_state: bool = True) -> Iterator[Server]:
    with TestClient(create_app(state, close_state=close_state)) as client:
        assert state.indices.wait_ready(30)
        server = Server(state, client)
        server.keys = {role: server.key(role) for role in ROLES}
        yield server


@pytest.fixture()
def make_server(tmp_path, store_url) -> Iterator[Callable[..., Server]]:
    """Start a server over the parametrized store (SQLite and PostgreSQL)."""
    stack: list[Any] = []

    def start(**overrides: Any) -> Server:
        build = {k: overrides.pop(k) for k in ("describer_factory",) if k in overrides}
        settings = make_settings(tmp_path, store_url, **overrides)
        state = build_state(settings, embedder=HashingEmbedder(), llms=None, **build)
        context = running_server(state)
        stack.append(context)
        return context.__enter__()

    yield start
    for context in reversed(stack):
        context.__exit__(None, None, None)


@pytest.fixture()
def server(make_server) -> Server:
    return make_server()


# ------------------------------------------------------------------------------ targets
def _fill(url: str) -> None:
    engine = create_engine(url)
    with engine.begin() as conn:
        for statement in TARGET_SQL:
            conn.execute(text(statement))
    engine.dispose()


@pytest.fixture()
def sqlite_target(tmp_path) -> str:
    url = f"sqlite:///{tmp_path / 'shop.sqlite'}"
    _fill(url)
    return url


@pytest.fixture()
def pg_target(pg_url) -> Iterator[str]:
    """A PostgreSQL target database of its own (the store may be another one)."""
    admin = create_engine(pg_url, isolation_level="AUTOCOMMIT")
    name = f"target_{uuid.uuid4().hex[:10]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(pg_url).set(database=name).render_as_string(hide_password=False)
    _fill(url)
    yield url
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(params=("sqlite", "postgresql"))
def target_url(request) -> str:
    return request.getfixturevalue("sqlite_target" if request.param == "sqlite" else "pg_target")


# ---------------------------------------------------------------------------- describers
class ScriptedDescriber:
    """Describes from the names alone (a stand-in for the LLM describer)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def describe_table(self, table: TableProfile) -> Description:
        self.calls.append(table.name)
        return Description(f"Table of {table.name}", (f"{table.name} list",))

    def describe_column(self, table: TableProfile, column: ColumnProfile) -> Description:
        self.calls.append(f"{table.name}.{column.name}")
        return Description(f"The {column.name} of {table.name}", ())

    def describe_enum(self, table: TableProfile, column: ColumnProfile, value: Any) -> Description:
        self.calls.append(f"{table.name}.{column.name}={value}")
        return Description(f"{column.name} {value}", ())


class BlockingDescriber(ScriptedDescriber):
    """Blocks in its first call until released (to catch a job while it runs)."""

    def __init__(self) -> None:
        super().__init__()
        self.entered, self.release = threading.Event(), threading.Event()

    def describe_table(self, table: TableProfile) -> Description:
        self.entered.set()
        assert self.release.wait(30), "the test never released the describer"
        return super().describe_table(table)


# ------------------------------------------------------------------ a real server's data
@pytest.fixture(scope="session")
def initialized_concert(tmp_path_factory: pytest.TempPathFactory) -> Initialized:
    """``almanac init`` of Spider's concert_singer with the test model and MiniLM, run once
    (profile, indices, the model's warm-up): tests serve a copy."""
    from tests.agents.conftest import spider_path

    url = f"sqlite:///{spider_path('concert_singer')}"
    return shared_session_build(
        tmp_path_factory, "concert-init", lambda folder: init_data_dir(folder / "data", url)
    )
