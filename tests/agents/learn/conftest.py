"""Fixtures of the mining tests: GeoQuery and Spider databases profiled into fresh stores."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.datasets.registry import default_data_root
from kb.profile.profiler import ProfileOptions, profile_database
from kb.store import KnowledgeStore
from kb.target.database import Database
from ukf import ExperienceUKF

DATA = default_data_root()
GEOQUERY = DATA / "geoquery" / "geography-db.added-in-2020.sqlite"
SPIDER = DATA / "spider_dev" / "database"

# labeled GeoQuery questions each giving one kind of mined entry (value, column, predicate)
NC = (
    "how many people live in NC",
    "SELECT population FROM state WHERE state_name = 'north carolina'",
)
SPOT = (
    "what is the lowest spot in texas",
    "SELECT h.lowest_point FROM highlow AS h WHERE h.state_name = 'texas'",
)
HOUSTON = (
    "how many people live in houston",
    "SELECT population FROM city WHERE city_name = 'houston'",
)


def profiled(tmp_path: Path, path: Path, name: str) -> tuple[KnowledgeStore, Database]:
    if not path.is_file():
        pytest.skip(f"benchmark database {path} not found (set ALMANAC_BENCH_DATA)")
    store = KnowledgeStore(f"sqlite:///{tmp_path / 'knowledge.db'}")
    database = Database(f"sqlite:///{path}")
    profile_database(database, store, database_name=name, options=ProfileOptions(progress=False))
    return store, database


@pytest.fixture
def geo(tmp_path: Path) -> Iterator[tuple[KnowledgeStore, Database]]:
    """GeoQuery profiled into a fresh store, with its read-only target."""
    store, database = profiled(tmp_path, GEOQUERY, "geoquery")
    yield store, database
    database.close()
    store.close()


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[KnowledgeStore, Database]]:
    """Spider's world_1 profiled into a fresh store."""
    store, database = profiled(tmp_path, SPIDER / "world_1" / "world_1.sqlite", "world_1")
    yield store, database
    database.close()
    store.close()


def labeled(question: str, sql: str, database: str = "geoquery", **fields: object) -> ExperienceUKF:
    """A labeled experience as feedback or an import stores it."""
    return ExperienceUKF.create(
        question, sql, database=database, dialect="sqlite", labeled=True, source="user", **fields
    )
