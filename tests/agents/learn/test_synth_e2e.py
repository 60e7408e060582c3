"""Query synthesis end to end with the real embedded model (Qwen2.5-Coder 0.5B) on
concert_singer: the model writes the questions and the chain answers them for the
back-check. The small model need not succeed often; what is asserted holds whatever it
writes: the report adds up, and every stored pair's SQL runs and gives the result the chain's
answer to its question gave."""

from __future__ import annotations

import pytest

from agents.learn.synth import (
    QuestionWriter,
    SynthOptions,
    synthesis_sources,
    synthesize,
    synthetic_experiences,
)
from agents.learn.synth.results import degenerate, run, same_result
from agents.pipeline import AskOptions, ModelTier, Pipeline, PipelineOptions
from agents.sql.generate import GenerateOptions
from tests.agents.learn.conftest import labeled

pytestmark = pytest.mark.slow  # the real model writes and answers six questions

DB = "concert_singer"
SOURCES = [
    ("How many singers are from France?", "SELECT count(*) FROM singer WHERE country = 'France'"),
    ("What is the average age of all singers?", "SELECT avg(age) FROM singer"),
    (
        "Show the names of stadiums without any concert.",
        "SELECT name FROM stadium WHERE stadium_id NOT IN (SELECT stadium_id FROM concert)",
    ),
]


def test_the_embedded_model_synthesizes_pairs_that_pass_their_back_check(concert, embedded_llm):
    store, database, retriever = concert
    store.upsert_many([labeled(q, sql, database=DB) for q, sql in SOURCES])
    pipeline = Pipeline(
        store=store,
        retriever=retriever,
        database=database,
        database_name=DB,
        tiers=[ModelTier("0.5b", embedded_llm)],
        options=PipelineOptions(log_questions=False, generate=GenerateOptions(timeout_s=None)),
    )
    writer = QuestionWriter(embedded_llm)
    report = synthesize(
        store,
        synthesis_sources(store),
        targets={DB: database},
        writer=writer,
        ask=lambda draft: pipeline.ask(draft.question, draft.context, AskOptions(n=1)),
        options=SynthOptions(transforms=("filter", "decompose", "vary"), per_source=2),
    )
    data = report.to_dict()
    totals = data["totals"]
    assert data["sources"] == 3 and totals["generated"] == 6
    outcomes = ("known", "failed", "degenerate", "question_failed", "backcheck_failed", "stored")
    for row in data["by_transform"].values():
        assert row["generated"] == sum(row[k] for k in outcomes), row
        assert row["ran"] == row["generated"] - row["known"] - row["failed"], row
    assert writer.calls == totals["ran"] - totals["degenerate"]  # one question per pair tried
    assert {"filter", "vary", "decompose"} <= set(data["by_transform"])
    stored = synthetic_experiences(store, database=DB)
    assert sorted(e.id for e in stored) == sorted(report.stored_ids)
    for entry in stored:
        provenance = entry.content_resources["synthetic"]
        results = run(database, entry.sql or "")
        assert degenerate(results) is None, entry.sql
        answered = run(database, provenance["back_check"]["sql"])
        assert same_result(answered, results), (entry.question, entry.sql, answered.sql)
        assert entry.question and entry.verified and entry.priority < 0
