"""Atomic facts from a correction, on concert_singer with scripted models (the orchestration;
the real model is in test_learn_feedback_e2e.py): only the facts that differ are learned, with
their provenance, active at once for the asker alone, shared when the correction is."""

from __future__ import annotations

from agents.experience_review import ExperienceReview
from agents.learn.mine.correction import learn_from_correction
from agents.pipeline import ModelTier, Pipeline, PipelineOptions
from indices.embeddings import HashingEmbedder
from indices.index_set import IndexSet
from tests.agents.scripted import ScriptedLLM, sql_reply
from ukf import MINING_KEY, ExperienceUKF, QueryContext, Reader, SynonymUKF

WRONG = "SELECT name FROM singer"
FRANCE = "SELECT name FROM singer WHERE country = 'France'"
QUESTION = "Which singers are French?"
ANA = QueryContext(reader=Reader(user="ana"))
BO = QueryContext(reader=Reader(user="bo"))


def make(concert, llm) -> Pipeline:
    store, database, _ = concert
    return Pipeline(
        store=store,
        retriever=IndexSet.build(store, HashingEmbedder()).retriever(),
        database=database,
        database_name="concert_singer",
        tiers=[ModelTier("scripted", llm)],
        options=PipelineOptions(),
    )


def used_ids(pipeline: Pipeline, question: str, context: QueryContext) -> set[str]:
    return {k.id for k in pipeline.ask(question, context).knowledge}


def test_a_correction_teaches_the_differing_fact_to_its_asker_alone_until_shared(concert):
    store, _, _ = concert
    pipeline = make(concert, ScriptedLLM([sql_reply(WRONG)]))
    answer = pipeline.ask(QUESTION, ANA)
    outcome = pipeline.feedback(answer.id, "wrong", corrected_sql=FRANCE, reader=ANA.reader)

    assert outcome.scope == "user" and len(outcome.learned) == 1
    fact = outcome.learned[0]
    assert (fact.kind, fact.phrase, fact.status, fact.scope) == (
        "value_synonym",
        "french",
        "active",
        "user",
    )
    assert fact.description == "\"french\" → singer.Country = 'France'"
    entry = store.get(fact.id)
    assert isinstance(entry, SynonymUKF) and not entry.inactive_mark
    assert entry.owner == "ana" and entry.parents == [outcome.experience_id]
    note = entry.metadata[MINING_KEY]
    assert (note["miner"], note["trust"], note["status"]) == ("correction", "correction", "active")

    assert fact.id in used_ids(pipeline, "How many singers are French?", ANA)
    assert fact.id not in used_ids(pipeline, "How many singers are French?", BO)

    sharing = ExperienceReview(store).approve(outcome.experience_id, "rita", workspace=None)
    shared = [f for f in sharing.learned if f.scope == "global"]
    assert len(shared) == 1 and shared[0].status == "active"
    assert store.get(shared[0].id).parents == [sharing.shared_id]
    assert shared[0].id in used_ids(pipeline, "How many singers are French?", BO)


def test_the_same_correction_twice_adds_nothing(concert):
    store, _, _ = concert
    pipeline = make(concert, ScriptedLLM([sql_reply(WRONG)]))
    answer = pipeline.ask(QUESTION, ANA)
    first = pipeline.feedback(answer.id, "wrong", corrected_sql=FRANCE, reader=ANA.reader)
    mined = store.count(source="auto", active=None)
    again = pipeline.feedback(answer.id, "wrong", corrected_sql=FRANCE, reader=ANA.reader)
    assert [f.id for f in again.learned] == [f.id for f in first.learned]
    assert again.learned[0].action == "merged" and again.learned[0].status == "active"
    assert store.count(source="auto", active=None) == mined


def test_facts_the_wrong_sql_already_had_are_not_learned(concert):
    store, _, _ = concert
    pipeline = make(concert, ScriptedLLM([sql_reply(FRANCE)]))
    answer = pipeline.ask("Names of the French singers", ANA)
    corrected = FRANCE + " ORDER BY name"
    outcome = pipeline.feedback(answer.id, "wrong", corrected_sql=corrected, reader=ANA.reader)
    assert outcome.labeled and outcome.learned == []
    assert store.count(source="auto", active=None) == 0


def test_a_column_the_answer_missed_is_paired_with_the_word_left_unexplained(concert):
    store, _, _ = concert
    experience = ExperienceUKF.create(
        "List each singer's tune",
        "SELECT name, song_name FROM singer",
        database="concert_singer",
        dialect="sqlite",
        labeled=True,
        verified=True,
        owner="ana",
        creator="feedback",
        source="user",
    )
    learning = learn_from_correction(store, experience, wrong_sql=WRONG)
    assert learning.differing == 1 and len(learning.facts) == 1
    fact = learning.facts[0]
    assert (fact.kind, fact.phrase, fact.scope) == ("column_synonym", "tune", "user")
    assert store.get(fact.id).content_resources["column"] == "Song_Name"
    assert store.get(fact.id).metadata[MINING_KEY]["how"] == "leftover"


def test_a_private_correction_overlays_broader_mined_knowledge_without_removing_it(concert):
    store, _, _ = concert
    netherlands = next(
        e
        for e in store.iterate(type="enum", tags={"DATABASE": "concert_singer"})
        if e.content_resources.get("value") == "Netherlands"
    )
    misleading = SynonymUKF.create(
        "french",
        netherlands,
        target_name="singer.Country = 'Netherlands'",
        database="concert_singer",
        collection="semantics",
        source="auto",
        priority=-1,
    )
    store.upsert(misleading)
    pipeline = make(concert, ScriptedLLM([sql_reply(WRONG)]))
    answer = pipeline.ask(QUESTION, ANA)
    outcome = pipeline.feedback(answer.id, "wrong", corrected_sql=FRANCE, reader=ANA.reader)
    assert [f.action for f in outcome.learned] == ["inserted"]
    assert not store.get(misleading.id).inactive_mark  # others keep it until blame or review
    # the word the misleading entry covered was learned anew, for her
    assert outcome.learned[0].id in used_ids(pipeline, "How many singers are French?", ANA)
    bo_sees = used_ids(pipeline, "How many singers are French?", BO)
    assert misleading.id in bo_sees and outcome.learned[0].id not in bo_sees


def test_a_value_named_with_its_columns_word_keeps_the_whole_phrase(world):
    store, _ = world
    experience = ExperienceUKF.create(
        "Which countries are in the old continent?",
        "SELECT name FROM country WHERE continent = 'Europe'",
        database="world_1",
        dialect="sqlite",
        labeled=True,
        verified=True,
        owner="ana",
        creator="feedback",
        source="user",
    )
    learning = learn_from_correction(store, experience, wrong_sql="SELECT name FROM country")
    assert [(f.phrase, f.description) for f in learning.facts] == [
        ("old continent", "\"old continent\" → country.Continent = 'Europe'")
    ]
