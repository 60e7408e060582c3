"""Shared fixtures: knowledge stores on SQLite and on a real PostgreSQL.

PostgreSQL comes from ``ALMANAC_TEST_PG_URL`` (``make test`` starts a throwaway server and sets
it); when unset, the session starts its own throwaway server. The real test model and the
AutoFin demo's data folder are built once per session (``tests.support.prebuilt``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.llm.models import TEST_MODEL
from kb.store import KnowledgeStore
from tests.support.postgres import ENV_URL, new_database, throwaway_postgres
from tests.support.prebuilt import DemoBuild, build_demo, packaged_model, shared_session_build

BACKENDS = ("sqlite", "postgresql")


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    url = os.environ.get(ENV_URL)
    if url:
        yield url
        return
    with throwaway_postgres() as started:
        yield started


@pytest.fixture()
def fresh_pg_database(pg_url: str) -> Iterator[str]:
    """A new, empty PostgreSQL database for one test; dropped afterwards."""
    with new_database(pg_url) as url:
        yield url


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'knowledge.db'}"
    return request.getfixturevalue("fresh_pg_database")


@pytest.fixture()
def store(store_url: str) -> Iterator[KnowledgeStore]:
    with KnowledgeStore(store_url) as opened:
        yield opened


@pytest.fixture(scope="session")
def embedded_model_path() -> Path:
    """The real embedded test model's GGUF file (Qwen2.5-Coder 0.5B), assembled once where
    ``make demo`` keeps it."""
    return packaged_model(TEST_MODEL)


@pytest.fixture(scope="session")
def demo_build(tmp_path_factory: pytest.TempPathFactory) -> DemoBuild:
    """``almanac demo --no-serve`` run once into a new data folder: never write into it, take
    a copy (``tests.support.prebuilt.copy_demo``)."""
    return shared_session_build(
        tmp_path_factory, "demo-build", lambda folder: build_demo(folder / "data")
    )
