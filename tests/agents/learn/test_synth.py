"""Query synthesis end to end on concert_singer with a scripted question writer and a
scripted chain: what is stored, the back-check, degenerate results, idempotence, resumption
and the report's consistency."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agents.answer import Answer
from agents.learn.synth import (
    QuestionWriter,
    SynthesisReport,
    SynthOptions,
    synthesis_sources,
    synthesize,
    synthetic_experiences,
)
from agents.learn.synth.records import MEMORY
from agents.learn.synth.results import run, same_result
from agents.learn.synth.variants import Variant
from agents.llm.base import Cancellation, LLMCancelledError
from kb.store import KnowledgeStore
from kb.target.database import Database
from tests.agents.learn.conftest import SPIDER, labeled, profiled
from tests.agents.scripted import ScriptedLLM
from ukf import ExperienceUKF

DB = "concert_singer"
COUNT_NL = (
    "How many singers are from the Netherlands?",
    "SELECT count(*) FROM singer WHERE country = 'Netherlands'",
)
NAMES = (
    "What are the names of the singers from France?",
    "SELECT name FROM singer WHERE country = 'France'",
)


@pytest.fixture
def concert(tmp_path: Path) -> Iterator[tuple[KnowledgeStore, Database]]:
    store, database = profiled(tmp_path, SPIDER / DB / f"{DB}.sqlite", DB)
    yield store, database
    database.close()
    store.close()


def _writer_reply(messages: list, _options: dict) -> str:
    """A question that carries the new SQL (so the scripted chain can answer it)."""
    sql = re.search(r"New SQL: (.*)", messages[-1]["content"]).group(1)
    return json.dumps({"question": f"Which rows does this give: {sql.replace('SELECT', 'pick')}"})


def writer(reply: Callable | str = _writer_reply) -> QuestionWriter:
    return QuestionWriter(ScriptedLLM([reply]))


class Chain:
    """A scripted chain: answers a synthetic question with the SQL it carries (``honest``),
    or with the source's SQL (a chain that misreads every question)."""

    def __init__(self, honest: bool = True, cancel_after: int | None = None):
        self.honest, self.cancel_after = honest, cancel_after
        self.asked: list[str] = []
        self.token = Cancellation()

    def __call__(self, draft: ExperienceUKF) -> Answer:
        self.asked.append(draft.question)
        if self.cancel_after is not None and len(self.asked) > self.cancel_after:
            self.token.cancel("stopped by the test")
            raise LLMCancelledError("stopped by the test")
        sql = draft.question.split(": ", 1)[1].replace("pick", "SELECT")
        if not self.honest:
            sql = draft.content_resources["synthetic"]["source_sql"]
        return Answer(id="a", question=draft.question, database=DB, sql=sql, executed=True)


def seed(store: KnowledgeStore, *pairs: tuple[str, str]) -> list[ExperienceUKF]:
    entries = [labeled(q, s, database=DB) for q, s in pairs]
    store.upsert_many(entries)
    return entries


def consistent(report: SynthesisReport) -> None:
    """Every variant has exactly one outcome; ``ran`` is what neither was known nor failed."""
    for row in report.to_dict()["by_transform"].values():
        outcomes = (
            "known",
            "failed",
            "degenerate",
            "question_failed",
            "backcheck_failed",
            "stored",
        )
        assert row["generated"] == sum(row[k] for k in outcomes), row
        assert row["ran"] == row["generated"] - row["known"] - row["failed"], row
    assert report.totals()["stored"] == len(report.stored_ids)


def test_kept_pairs_are_verified_synthetic_experiences_whose_sql_runs(concert):
    store, database = concert
    [source] = seed(store, NAMES)
    chain = Chain()
    report = synthesize(
        store,
        synthesis_sources(store),
        targets={DB: database},
        writer=writer(),
        ask=chain,
        options=SynthOptions(per_source=6),
    )
    consistent(report)
    stored = synthetic_experiences(store, database=DB)
    assert report.totals()["stored"] == len(stored) >= 3
    assert {e.content_resources["synthetic"]["transform"] for e in stored} >= {"filter", "vary"}
    source_result = run(database, source.sql or "")
    for entry in stored:
        provenance = entry.content_resources["synthetic"]
        assert entry.labeled and entry.verified and entry.source == "synthetic"
        assert entry.creator == "synthesis" and entry.priority < source.priority
        assert entry.parents == [source.id] and provenance["source_experience"] == source.id
        assert provenance["source"] == "synthetic" and provenance["back_check"]["matched"]
        assert entry.tag_values("DATABASE") == [DB] or DB in entry.tag_values("DATABASE")
        results = run(database, entry.sql or "")
        assert results.ok and results.row_count == provenance["rows"] > 0
        assert same_result(run(database, provenance["back_check"]["sql"]), results)
        assert not same_result(results, source_result)  # compose and vary change the result
    assert synthesis_sources(store) == [source]  # synthetic pairs are no sources


def test_a_pair_whose_back_check_fails_is_not_stored(concert):
    store, database = concert
    seed(store, NAMES)
    report = synthesize(
        store,
        synthesis_sources(store),
        targets={DB: database},
        writer=writer(),
        ask=Chain(honest=False),
    )
    consistent(report)
    totals = report.totals()
    assert (
        totals["stored"] == 0
        and totals["backcheck_failed"] == totals["ran"] - totals["degenerate"] > 0
    )
    assert synthetic_experiences(store) == []
    assert {d["outcome"] for d in report.dropped} <= {"backcheck_failed", "degenerate"}

    # remembered on the source: a run again skips them, unless it retries
    memory = synthesis_sources(store)[0].metadata[MEMORY]
    assert len(memory) == totals["generated"] - totals["known"] - totals["stored"]
    chain = Chain()
    again = synthesize(
        store, synthesis_sources(store), targets={DB: database}, writer=writer(), ask=chain
    )
    assert again.totals()["known"] == again.totals()["generated"] and chain.asked == []
    retried = synthesize(
        store,
        synthesis_sources(store),
        targets={DB: database},
        writer=writer(),
        ask=chain,
        options=SynthOptions(retry=True),
    )
    consistent(retried)
    assert retried.totals()["stored"] == totals["backcheck_failed"] == len(chain.asked)


def test_degenerate_and_unchanged_results_are_dropped_before_the_llm(concert):
    store, database = concert
    seed(store, COUNT_NL)  # 1 singer; 'United States' also has 1: an unchanged result
    llm_writer, chain = writer(), Chain()
    report = synthesize(
        store,
        synthesis_sources(store),
        targets={DB: database},
        writer=llm_writer,
        ask=chain,
        options=SynthOptions(transforms=("vary", "filter"), per_source=20),
    )
    consistent(report)
    reasons = {d["sql"]: d["reason"] for d in report.dropped if d["outcome"] == "degenerate"}
    assert reasons["SELECT COUNT(*) FROM singer WHERE country = 'United States'"] == (
        "the source's result unchanged"
    )
    assert "a single 0 or NULL aggregate" in reasons.values()  # Netherlands and Is_male ...
    stored = {e.sql for e in synthetic_experiences(store)}
    assert "SELECT COUNT(*) FROM singer WHERE country = 'France'" in stored
    assert llm_writer.calls == report.totals()["ran"] - report.totals()["degenerate"]


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("SELECT name FROM singer", "no JSON answer"),
        (json.dumps({"question": "SELECT name FROM singer"}), "SQL instead of a question"),
        (
            json.dumps({"question": "The AU total, same scenario as the original query?"}),
            "only the prompt shows",
        ),
        (json.dumps({"question": "How many singers does the new SQL count?"}), "prompt shows"),
        (json.dumps({"question": "Which stadiums hold more than in the original?"}), "prompt"),
    ],
)
def test_a_question_the_model_cannot_write_drops_the_pair_before_the_back_check(
    concert, reply, reason
):
    store, database = concert
    seed(store, NAMES)
    chain = Chain()
    report = synthesize(
        store,
        synthesis_sources(store),
        targets={DB: database},
        writer=writer(reply),
        ask=chain,
    )
    consistent(report)
    assert report.totals()["stored"] == 0 and report.totals()["question_failed"] > 0
    assert chain.asked == []  # no chain call spent on it
    assert any(reason in d["reason"] for d in report.dropped)


def test_a_plain_question_naming_an_origin_is_kept():
    """The word alone is ordinary ("the original release"); only the prompt's own nouns
    ("the original query", "the new SQL") are refused."""
    variant = Variant("filter", "SELECT name FROM singer", "added nothing", "SELECT 1")
    for question in (
        "Which singers sang on the original release of each song?",
        "What is the source of each question in the survey table?",
    ):
        written = writer(json.dumps({"question": question})).write("Who sang?", variant, ["name"])
        assert written == question


def test_a_second_run_stores_nothing_twice_and_asks_nothing_again(concert):
    store, database = concert
    seed(store, NAMES, COUNT_NL)
    first = synthesize(
        store, synthesis_sources(store), targets={DB: database}, writer=writer(), ask=Chain()
    )
    stored = len(synthetic_experiences(store))
    assert stored == first.totals()["stored"] > 0
    chain, llm_writer = Chain(), writer()
    again = synthesize(
        store, synthesis_sources(store), targets={DB: database}, writer=llm_writer, ask=chain
    )
    consistent(again)
    assert again.totals()["known"] == again.totals()["generated"] == first.totals()["generated"]
    assert again.totals()["stored"] == 0 and chain.asked == [] and llm_writer.calls == 0
    assert len(synthetic_experiences(store)) == stored


def test_a_cancelled_run_keeps_its_pairs_and_a_rerun_finishes_the_rest(concert, tmp_path):
    store, database = concert
    seed(store, NAMES, COUNT_NL)
    stopping = Chain(cancel_after=2)
    with pytest.raises(LLMCancelledError):
        synthesize(
            store,
            synthesis_sources(store),
            targets={DB: database},
            writer=writer(),
            ask=stopping,
            cancellation=stopping.token,
        )
    kept = {e.sql for e in synthetic_experiences(store)}
    assert len(kept) == 2
    resumed = Chain()
    report = synthesize(
        store, synthesis_sources(store), targets={DB: database}, writer=writer(), ask=resumed
    )
    consistent(report)
    assert report.totals()["known"] >= 2 and report.totals()["stored"] > 0
    assert not set(resumed.asked) & set(stopping.asked[:2])  # the stored two not asked again

    fresh_store, fresh_db = profiled(tmp_path / "fresh", SPIDER / DB / f"{DB}.sqlite", DB)
    seed(fresh_store, NAMES, COUNT_NL)
    whole = synthesize(
        fresh_store,
        synthesis_sources(fresh_store),
        targets={DB: fresh_db},
        writer=writer(),
        ask=Chain(),
    )
    resumed_sqls = [e.sql for e in synthetic_experiences(store)]
    assert sorted(resumed_sqls) == sorted(e.sql for e in synthetic_experiences(fresh_store))
    assert len(resumed_sqls) == len(set(resumed_sqls)) == whole.totals()["stored"]
    fresh_db.close()
    fresh_store.close()


def test_the_limit_stops_the_run_and_sources_without_a_target_are_skipped(concert):
    store, database = concert
    seed(store, NAMES, COUNT_NL)
    other = labeled("how many states", "SELECT count(*) FROM state", database="geoquery")
    broken = labeled("how old are they", "SELECT oldness FROM singer", database=DB)
    store.upsert_many([other, broken])
    report = synthesize(
        store,
        [*synthesis_sources(store)],
        targets={DB: database},
        writer=writer(),
        ask=Chain(),
        options=SynthOptions(limit=2),
    )
    consistent(report)
    assert len(report.stored_ids) == 2 and report.limit_reached
    assert report.skipped["no target"] == 1
    assert report.skipped.get("source SQL fails", 0) <= 1  # when reached before the limit
    whole = synthesize(store, [broken], targets={DB: database}, writer=writer(), ask=Chain())
    assert whole.skipped == {"source SQL fails": 1} and whole.totals()["generated"] == 0
    with pytest.raises(ValueError, match="unknown transforms"):
        SynthOptions(transforms=("shuffle",))
