"""Fixtures of the distillation tests: Spider's concert_singer profiled into a store holding
dev questions with their gold SQL as verified experiences (human), plus one synthetic pair
and one mined question (a sure vote on an unlabeled one)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.datasets.registry import default_data_root
from indices.embeddings import HashingEmbedder
from indices.index_set import IndexSet
from indices.retriever import Retriever
from kb.profile.profiler import ProfileOptions, profile_database
from kb.store import KnowledgeStore
from kb.target.database import Database
from ukf import ExperienceUKF

SPIDER = default_data_root() / "spider_dev"
DB = "concert_singer"


def dev_pairs(count: int) -> list[tuple[str, str]]:
    """The first ``count`` concert_singer dev questions with their gold SQL."""
    path = SPIDER / "dev.json"
    if not path.is_file():
        pytest.skip(f"Spider dev set {path} not found (set ALMANAC_BENCH_DATA)")
    rows = [r for r in json.loads(path.read_text()) if r["db_id"] == DB]
    return [(r["question"], r["query"]) for r in rows[:count]]


def human(question: str, sql: str) -> ExperienceUKF:
    return ExperienceUKF.create(
        question,
        sql,
        database=DB,
        dialect="sqlite",
        labeled=True,
        verified=True,
        source="user",
        creator="feedback",
    )


def synthetic(question: str, sql: str, parent: ExperienceUKF) -> ExperienceUKF:
    return ExperienceUKF.create(
        question,
        sql,
        database=DB,
        dialect="sqlite",
        labeled=True,
        verified=True,
        source="derived",
        creator="synthesis",
        parents=[parent.id],
        priority=-1,
        content_resources={"synthetic": {"source": "synthetic", "source_experience": parent.id}},
    )


def mined(question: str, sql: str, share: float = 1.0) -> ExperienceUKF:
    entry = ExperienceUKF.create(question, sql, database=DB, dialect="sqlite", source="user")
    vote = {"sql": sql, "share": share, "confidence": share, "samples": 5, "ran": 5}
    return entry.clone(metadata={"vote": {**vote, "distinct": 1, "row_count": 3}})


def experiences(count: int = 24) -> list[ExperienceUKF]:
    pairs = dev_pairs(count)
    humans = [human(q, s) for q, s in pairs]
    return [
        *humans,
        synthetic(
            "How many singers are from France?",
            humans[0].sql + " WHERE country = 'France'",
            humans[0],
        ),
        mined("Which singers are older than 30?", "SELECT name FROM singer WHERE age > 30"),
    ]


@dataclass
class SpiderStore:
    store: KnowledgeStore
    database: Database
    retriever: Retriever
    entries: list[ExperienceUKF]


def spider_store(folder: Path, entries: list[ExperienceUKF]) -> SpiderStore:
    """concert_singer profiled into a new store under ``folder`` holding ``entries``."""
    path = SPIDER / "database" / DB / f"{DB}.sqlite"
    if not path.is_file():
        pytest.skip(f"Spider database {path} not found")
    folder.mkdir(parents=True, exist_ok=True)
    store = KnowledgeStore(f"sqlite:///{folder / 'knowledge.db'}")
    database = Database(f"sqlite:///{path}")
    profile_database(database, store, database_name=DB, options=ProfileOptions(progress=False))
    store.upsert_many(entries)
    retriever = IndexSet.build(store, HashingEmbedder()).retriever()
    return SpiderStore(store, database, retriever, entries)


@pytest.fixture
def concert(tmp_path: Path) -> Iterator[SpiderStore]:
    built = spider_store(tmp_path / "store", experiences())
    yield built
    built.database.close()
    built.store.close()
