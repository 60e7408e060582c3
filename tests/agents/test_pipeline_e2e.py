"""End to end with the real embedded model (Qwen2.5-Coder 0.5B) on a profiled Spider database."""

from __future__ import annotations

from collections import Counter

import pytest

from agents.llm.base import LLMWrapper
from agents.llm.llamacpp import LlamaCppLLM
from agents.pipeline import AskOptions, ModelTier, Pipeline

pytestmark = pytest.mark.slow  # the real model answers every question (~30 s on 2 cores)

# (question, gold SQL) from Spider dev, concert_singer
QUESTIONS = [
    ("How many singers do we have?", "SELECT count(*) FROM singer"),
    (
        "Show all countries and the number of singers in each country.",
        "SELECT country, count(*) FROM singer GROUP BY country",
    ),
    (
        "What is the average, minimum, and maximum age of all singers from France?",
        "SELECT avg(age), min(age), max(age) FROM singer WHERE country = 'France'",
    ),
]


class CountingLLM(LLMWrapper):
    """The real model, counting the calls that decode several replies together."""

    def __init__(self, inner: LlamaCppLLM) -> None:
        self.inner, self.name, self.together = inner, inner.name, []

    def chat(self, messages, **options):
        return self.inner.chat(messages, **options)

    def chat_variants(self, messages, variants, **options):
        self.together.append(len(variants))
        return self.inner.chat_variants(messages, variants, **options)


@pytest.fixture
def pipeline(concert, embedded_llm) -> Pipeline:
    store, database, retriever = concert
    return Pipeline(
        store=store,
        retriever=retriever,
        database=database,
        database_name="concert_singer",
        tiers=[ModelTier("0.5b-a", embedded_llm), ModelTier("0.5b-b", embedded_llm)],
    )


@pytest.mark.parametrize(
    ("question", "gold"), QUESTIONS, ids=["count", "group", "aggregate-filter"]
)
def test_the_embedded_model_answers_spider_questions_with_the_right_rows(pipeline, question, gold):
    answer = pipeline.ask(question)
    expected = pipeline.database.execute(gold)
    assert answer.error is None, answer.error
    assert Counter(map(tuple, answer.rows)) == Counter(expected.rows), answer.sql
    assert answer.knowledge and answer.stage("generate").completion_tokens > 0


def test_a_cascade_on_the_embedded_model(pipeline):
    answer = pipeline.ask(QUESTIONS[0][0], options=AskOptions(cascade=True))
    assert answer.error is None and answer.rows == [[6]]
    tiers = [c.tier for c in answer.candidates]
    # the small tier always draws its two candidates first; the next tier only runs when
    # they disagree, and the answer names the tier that produced it
    assert tiers[:2] == ["0.5b-a", "0.5b-a"]
    if answer.tier == "0.5b-a":
        assert len(tiers) == 2 and answer.vote_share == 1.0
    else:
        assert answer.tier == "0.5b-b" and tiers[2:] == ["0.5b-b"]


def test_a_vote_decoded_together_on_the_embedded_model(concert, embedded_model_path):
    store, database, retriever = concert
    llm = CountingLLM(
        LlamaCppLLM(str(embedded_model_path), n_ctx=4096, n_threads=2, parallel_sequences=3)
    )
    pipeline = Pipeline(
        store=store,
        retriever=retriever,
        database=database,
        database_name="concert_singer",
        tiers=[ModelTier("0.5b", llm)],
    )
    answer = pipeline.ask(QUESTIONS[0][0], options=AskOptions(n=3))
    assert answer.error is None and answer.rows == [[6]], answer.sql
    assert llm.together == [3]  # greedy and two samples in one joint decode
    assert [c.sample for c in answer.candidates] == [0, 1, 2]
    assert answer.stage("generate").completion_tokens > 0
