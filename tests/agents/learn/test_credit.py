"""Credit and blame on the knowledge an answer used, on concert_singer with scripted models."""

from __future__ import annotations

import pytest

from agents.learn.credit import BlameThreshold, blamed, counters
from agents.pipeline import ModelTier, Pipeline, PipelineOptions
from indices.embeddings import HashingEmbedder
from indices.index_set import IndexSet
from tests.agents.scripted import ScriptedLLM, sql_reply
from ukf import SynonymUKF

FRANCE = "SELECT name FROM singer WHERE country = 'France'"
QUESTION = "What are the names of the singers from France?"


def make(concert, llm, **options) -> Pipeline:
    store, database, _ = concert
    return Pipeline(
        store=store,
        retriever=IndexSet.build(store, HashingEmbedder()).retriever(),
        database=database,
        database_name="concert_singer",
        tiers=[ModelTier("scripted", llm)],
        options=PipelineOptions(**options),
    )


def test_a_verdict_counts_once_per_answer_and_a_changed_verdict_moves_it(concert):
    store, _, _ = concert
    pipeline = make(concert, ScriptedLLM([sql_reply(FRANCE)]))
    answer = pipeline.ask(QUESTION)
    used = [k.id for k in answer.knowledge]
    assert used
    before = store.get_many(used)

    outcome = pipeline.feedback(answer.id, "correct")
    assert outcome.credit.count == "credit" and sorted(outcome.credit.changed) == sorted(used)
    pipeline.feedback(answer.id, "correct")  # the same verdict again: counted once
    for uid, entry in store.get_many(used).items():
        assert (counters(entry)["credit"], counters(entry)["blame"]) == (1, 0), entry.name
        assert entry.version == before[uid].version and entry.id == uid
        assert entry.content_hash == before[uid].content_hash

    pipeline.feedback(answer.id, "wrong")  # changed: the credit moves to blame
    for entry in store.get_many(used).values():
        assert (counters(entry)["credit"], counters(entry)["blame"]) == (0, 1), entry.name
        assert counters(entry)["last_at"]

    second = pipeline.ask(QUESTION)
    pipeline.feedback(second.id, "correct")  # another answer counts on its own
    assert {counters(e)["credit"] for e in store.get_many(used).values()} == {1}


def test_blame_past_the_threshold_sends_mined_knowledge_to_review_and_only_flags_schema(concert):
    store, _, _ = concert
    france = next(
        e
        for e in store.iterate(type="enum", tags={"DATABASE": "concert_singer"})
        if e.content_resources.get("value") == "France"
    )
    mined = SynonymUKF.create(
        "gallic",
        france,
        target_name="singer.Country = 'France'",
        database="concert_singer",
        collection="semantics",
        source="auto",
        priority=-1,
    )
    store.upsert(mined)
    pipeline = make(concert, ScriptedLLM([sql_reply(FRANCE)]), blame_threshold=2)
    question = "Which singers are gallic?"
    schema_ids: set[str] = set()
    for _ in range(2):
        answer = pipeline.ask(question)
        used = {k.id for k in answer.knowledge}
        assert mined.id in used
        schema_ids |= {k.id for k in answer.knowledge if k.type in ("table", "column")}
        outcome = pipeline.feedback(answer.id, "wrong")
    assert outcome.credit.deactivated == [mined.id]
    entry = store.get(mined.id)
    assert entry.inactive_mark and entry.metadata["review"]["reason"] == "blamed"
    assert entry.metadata["review"]["status"] == "pending" and counters(entry)["blame"] == 2
    assert schema_ids and set(outcome.credit.flagged) >= schema_ids
    for schema_entry in store.get_many(schema_ids).values():
        assert not schema_entry.inactive_mark
        assert schema_entry.metadata["review"]["status"] == "flagged"
    assert mined.id in {e.id for e in blamed(store)}
    assert mined.id not in {k.id for k in pipeline.ask(question).knowledge}


def test_the_threshold_weighs_blame_against_credit():
    threshold = BlameThreshold(min_blame=3)
    assert not threshold.passed(credit=0, blame=2)
    assert threshold.passed(credit=0, blame=3) and threshold.passed(credit=1, blame=3)
    assert not threshold.passed(credit=2, blame=4) and threshold.passed(credit=2, blame=5)
    with pytest.raises(ValueError, match="min_blame"):
        BlameThreshold(min_blame=0)
