"""Fixtures of the agent tests: a profiled Spider database and the real embedded model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.llm.llamacpp import LlamaCppLLM
from bench.datasets.registry import default_data_root
from indices.index_set import IndexSet
from indices.retriever import Retriever
from kb.profile.profiler import ProfileOptions, profile_database
from kb.store import KnowledgeStore
from kb.target.database import Database

SPIDER = default_data_root() / "spider_dev" / "database"


def spider_path(name: str) -> Path:
    path = SPIDER / name / f"{name}.sqlite"
    if not path.exists():
        pytest.skip(f"Spider database {name} not found under {SPIDER}")
    return path


@pytest.fixture
def concert(tmp_path: Path) -> Iterator[tuple[KnowledgeStore, Database, Retriever]]:
    """concert_singer profiled into a fresh SQLite store."""
    store = KnowledgeStore(f"sqlite:///{tmp_path / 'knowledge.db'}")
    database = Database(f"sqlite:///{spider_path('concert_singer')}")
    profile_database(
        database, store, database_name="concert_singer", options=ProfileOptions(progress=False)
    )
    yield store, database, IndexSet.build(store).retriever()
    database.close()
    store.close()


@pytest.fixture(scope="session")
def embedded_llm(embedded_model_path: Path) -> LlamaCppLLM:
    """The real embedded test model, loaded once."""
    return LlamaCppLLM(str(embedded_model_path), n_ctx=4096, n_threads=2, seed=11)
