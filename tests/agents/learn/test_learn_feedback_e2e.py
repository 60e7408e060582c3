"""End to end with the real embedded model (Qwen2.5-Coder 0.5B) on concert_singer: the model
answers a question whose word it cannot know, the analyst corrects the SQL, the feedback says
what was learned, and the analyst's next similar question brings the learned fact in."""

from __future__ import annotations

import pytest

from agents.pipeline import ModelTier, Pipeline, PipelineOptions
from agents.sql.generate import GenerateOptions
from ukf import QueryContext, Reader

pytestmark = pytest.mark.slow  # the real model answers two questions

FRANCE = "SELECT name FROM singer WHERE country = 'France'"
ANA = QueryContext(reader=Reader(user="ana"))


def test_a_correction_of_the_embedded_models_answer_teaches_the_word_it_missed(
    concert, embedded_llm
):
    store, database, retriever = concert
    pipeline = Pipeline(
        store=store,
        retriever=retriever,
        database=database,
        database_name="concert_singer",
        tiers=[ModelTier("0.5b", embedded_llm)],
        # no time limit on the model: on a loaded machine a 120 s limit can cut an answer
        options=PipelineOptions(generate=GenerateOptions(timeout_s=None)),
    )
    answer = pipeline.ask("Which singers are gallic?", ANA)
    assert answer.sql, answer.error
    assert answer.sql and "france" not in answer.sql.lower(), answer.sql  # it could not know

    outcome = pipeline.feedback(answer.id, "wrong", corrected_sql=FRANCE, reader=ANA.reader)
    learned = {(f.phrase, f.description, f.status, f.scope) for f in outcome.learned}
    assert ("gallic", "\"gallic\" → singer.Country = 'France'", "active", "user") in learned

    fact = next(f for f in outcome.learned if f.phrase == "gallic")
    again = pipeline.ask("How many gallic singers are there?", ANA)
    assert fact.id in {k.id for k in again.knowledge}, again.error
    assert "France" in (again.sql or ""), again.sql
