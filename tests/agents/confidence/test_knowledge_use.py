"""Whether the answered SQL uses the values and filters linked to the question's phrases, on
the real concert_singer knowledge base."""

from __future__ import annotations

from agents.confidence.knowledge_use import knowledge_use
from agents.rag.agent import RagAgent, RagOptions
from agents.rag.schema_slice import SchemaCatalog
from ukf import PredicateUKF, QueryContext


def _rag(concert, question: str):
    store, _database, retriever = concert
    agent = RagAgent(retriever, SchemaCatalog(store, "concert_singer"), RagOptions())
    return agent.run(question, QueryContext(database="concert_singer"))


def test_a_named_value_the_sql_filters_on_is_used(concert):
    rag = _rag(concert, "How many singers are from France?")
    used = knowledge_use(rag, "SELECT count(*) FROM singer WHERE country = 'France'")
    assert used["linked_values"] >= 1
    assert used["linked_values_unused"] == 0 and used["linked_values_elsewhere"] == 0
    like = knowledge_use(rag, "SELECT count(*) FROM singer WHERE country LIKE '%france%'")
    assert like["linked_values_unused"] == 0


def test_a_named_value_left_out_or_looked_up_in_another_table_is_flagged(concert):
    rag = _rag(concert, "How many singers are from France?")
    left_out = knowledge_use(rag, "SELECT count(*) FROM singer")
    assert left_out["linked_values_unused"] == 1 and left_out["linked_values_elsewhere"] == 0
    elsewhere = knowledge_use(rag, "SELECT count(*) FROM stadium WHERE location = 'France'")
    assert elsewhere["linked_values_unused"] == 0 and elsewhere["linked_values_elsewhere"] == 1


def test_a_predicate_the_question_names_must_keep_every_value_it_quotes(concert):
    store = concert[0]
    store.upsert(
        PredicateUKF.create(
            "European singers", "country IN ('France', 'Netherlands')", database="concert_singer"
        )
    )
    rag = _rag(concert, "How many European singers are there?")
    both = "SELECT count(*) FROM singer WHERE country IN ('France', 'Netherlands')"
    assert knowledge_use(rag, both)["linked_filters"] == 1
    assert knowledge_use(rag, both)["linked_filters_unused"] == 0
    one = "SELECT count(*) FROM singer WHERE country = 'France'"
    assert knowledge_use(rag, one)["linked_filters_unused"] == 1
    assert knowledge_use(rag, "SELECT count(*) FROM singer")["linked_filters_unused"] == 1


def test_nothing_when_the_sql_does_not_parse_or_nothing_is_linked(concert):
    rag = _rag(concert, "How many singers are from France?")
    assert knowledge_use(rag, "SELECT FROM WHERE (((") == {}
    plain = knowledge_use(_rag(concert, "How many singers are there?"), "SELECT 1")
    assert plain["linked_values"] == 0 and plain["linked_filters"] == 0
