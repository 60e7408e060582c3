"""Whether the answered SQL keeps the filters the question names, on the real concert_singer
knowledge base with a predicate and a metric added."""

from __future__ import annotations

import pytest

from agents.confidence.knowledge_use import knowledge_use
from agents.rag.agent import RagAgent, RagOptions
from agents.rag.schema_slice import SchemaCatalog
from ukf import MetricUKF, PredicateUKF, QueryContext

BOTH = "SELECT count(*) FROM singer WHERE country IN ('France', 'Netherlands')"


def _rag(concert, question: str):
    store, _database, retriever = concert
    agent = RagAgent(retriever, SchemaCatalog(store, "concert_singer"), RagOptions())
    return agent.run(question, QueryContext(database="concert_singer"))


@pytest.fixture
def european(concert):
    concert[0].upsert_many(
        [
            PredicateUKF.create(
                "European singers",
                "country IN ('France', 'Netherlands')",
                database="concert_singer",
            ),
            MetricUKF.create(
                "seniority", "AVG(age) WHERE is_male = 'T'", database="concert_singer"
            ),
        ]
    )
    return concert


def test_a_named_predicate_must_keep_every_value_it_quotes(european):
    rag = _rag(european, "How many European singers are there?")
    assert knowledge_use(rag, BOTH) == {"linked_filters": 1.0, "linked_filters_unused": 0.0}
    one = "SELECT count(*) FROM singer WHERE country = 'France'"
    assert knowledge_use(rag, one)["linked_filters_unused"] == 1
    assert knowledge_use(rag, "SELECT count(*) FROM singer")["linked_filters_unused"] == 1
    like = "SELECT count(*) FROM singer WHERE country LIKE '%france%' OR country = 'Netherlands'"
    assert knowledge_use(rag, like)["linked_filters_unused"] == 0


def test_a_named_metric_whose_formula_filters_is_checked_too(european):
    rag = _rag(european, "What is the seniority of the singers?")
    kept = knowledge_use(rag, "SELECT avg(age) FROM singer WHERE is_male = 'T'")
    assert kept == {"linked_filters": 1.0, "linked_filters_unused": 0.0}
    assert knowledge_use(rag, "SELECT avg(age) FROM singer")["linked_filters_unused"] == 1


def test_nothing_named_nothing_counted_and_unparsable_sql_left_out(european):
    rag = _rag(european, "How many singers are from France?")
    assert knowledge_use(rag, "SELECT count(*) FROM singer")["linked_filters"] == 0
    assert knowledge_use(rag, "SELECT FROM WHERE (((") == {}
