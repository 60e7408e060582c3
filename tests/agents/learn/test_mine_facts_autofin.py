"""Periods and preferences mined from AutoFin's train questions (the generated database,
profiled, its knowledge pack *not* imported): "last month" relative to the query time,
AutoFin's default caliber as a profile preference, and both used for the next question: the
retriever finds them, and the RAG's calendar resolves the mined phrase at the new query time.
With the pack's reporting calendar (data published on the 10th) questions asked before the
10th are mined too, relative to the newest published month."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agents.learn.mine import activate, mine_labeled
from agents.learn.mine.labeled import kind_of
from agents.learn.mine.preferences import mine_preferences
from agents.rag.question_facts import calendar_of, time_windows
from bench.autofin import generate
from bench.datasets import load_almanac_jsonl
from indices.index_set import IndexSet
from kb.jsonl import read_jsonl
from kb.merge import merge_mined
from kb.profile.profiler import ProfileOptions, profile_database
from kb.store import KnowledgeStore
from kb.target.database import Database
from ukf import BaseUKF, ExperienceUKF, QueryContext

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def autofin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """AutoFin generated and profiled once (a store file each test copies)."""
    folder = tmp_path_factory.mktemp("autofin")
    generate(folder, seed=7, progress=False)
    with (
        KnowledgeStore(f"sqlite:///{folder / 'profiled.db'}") as store,
        Database(f"sqlite:///{folder / 'autofin.sqlite'}") as database,
    ):
        profile_database(
            database, store, database_name="autofin", options=ProfileOptions(progress=False)
        )
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def mined(autofin: Path, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple]:
    """A copy of the profiled store (with the pack when the test is parametrized so), the
    target, and the train questions as labeled experiences asked in their context."""
    shutil.copyfile(autofin / "profiled.db", tmp_path / "k.db")
    store = KnowledgeStore(f"sqlite:///{tmp_path / 'k.db'}")
    if getattr(request, "param", "") == "pack":
        store.upsert_many(list(read_jsonl(autofin / "knowledge.jsonl")))
    database = Database(f"sqlite:///{autofin / 'autofin.sqlite'}")
    experiences = [
        ExperienceUKF.create(
            e.question,
            e.gold_sql[0],
            database="autofin",
            dialect="sqlite",
            context=e.context,
            labeled=True,
            source="user",
        )
        for e in load_almanac_jsonl(autofin / "train.jsonl")
    ]
    yield store, database, experiences
    database.close()
    store.close()


def named(store: KnowledgeStore, name: str, kind: str) -> BaseUKF:
    (entry,) = [
        e for e in store.iterate(source="auto", active=None, name=name) if kind_of(e) == kind
    ]
    return entry


def test_last_month_and_the_default_caliber_are_mined_and_used(mined):
    store, database, experiences = mined
    report = mine_labeled(store, experiences, job_id="af", targets={"autofin": database})
    assert report.mined["relative_period"] > 0 and report.mined["period"] > 0

    last_month = named(store, "last month", "relative_period")
    assert last_month.content_resources["condition"] == (
        "period = the month before the query month (written YYYYMM)"
    )
    assert last_month.content_resources["calendar"] == {"period_format": "YYYYMM"}
    asked = {e.id: e for e in experiences}
    for parent in last_month.parents:  # each asked on or after the 10th (no pack: no lag)
        assert asked[parent].context.query_time.day >= 10

    habits = mine_preferences(store, experiences, job_id="af", targets={"autofin": database})
    (caliber_b,) = [e for e in habits.entries if e.variant == "profile:caliber=B"]
    assert caliber_b.content_resources["preference"]["condition"] == "caliber = 'B'"
    assert caliber_b.triggers == {"user_profile_match": {"caliber": "B"}}
    merge_mined(store, habits.entries, include_inactive=True)
    activate(store, [last_month.id, caliber_b.id])

    retriever = IndexSet.build(store, vectors=False, experiences=False).retriever()
    question = "Vega revenue last month?"
    context = QueryContext(
        database="autofin",
        query_time=datetime(2025, 8, 20, 9, tzinfo=UTC),
        user_profile={"caliber": "B", "currency": "USD"},
    )
    evidence = retriever.retrieve(question, context)
    assert {last_month.id, caliber_b.id} <= set(evidence.ids())
    (window,) = time_windows(question, calendar_of(evidence), context)
    assert (window.phrase, window.first, window.last) == ("last month", "202507", "202507")

    caliber_a = context.model_copy(update={"user_profile": {"caliber": "A"}})
    assert caliber_b.id not in retriever.retrieve(question, caliber_a).ids()


@pytest.mark.parametrize("mined", ["pack"], indirect=True)
def test_with_the_packs_calendar_periods_are_relative_to_the_newest_published_month(mined):
    store, database, experiences = mined
    mine_labeled(store, experiences, targets={"autofin": database})

    last_month = named(store, "last month", "relative_period")
    assert last_month.content_resources["period"]["anchor"] == "newest published month"
    assert last_month.content_resources["calendar"]["publish_day"] == 10
    asked = {e.id: e for e in experiences}
    days = {asked[p].context.query_time.day for p in last_month.parents}
    assert min(days) < 10 <= max(days)  # before the 10th too, now that the lag is known
