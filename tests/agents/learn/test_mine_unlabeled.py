"""Mining unlabeled questions by the vote, on the real GeoQuery database.

The vote runs through a real :class:`Pipeline` (real retrieval, real execution, the real vote)
whose model is scripted: each sample's SQL is chosen by the test, so agreement is controlled.
"""

from __future__ import annotations

import itertools

import pytest

from agents.learn.mine import activate, candidates, mine_labeled
from agents.learn.mine.unlabeled import (
    VOTE,
    Vote,
    VoteThresholds,
    mine_unlabeled,
    unlabeled_experiences,
    vote_of,
)
from agents.llm.base import Cancellation, LLMCancelledError
from agents.pipeline import AskOptions, ModelTier, Pipeline, PipelineOptions
from indices.embeddings import HashingEmbedder
from indices.index_set import IndexSet
from tests.agents.learn.conftest import NC, labeled
from tests.agents.scripted import ScriptedLLM, share_confidence, sql_reply
from ukf import MINING_KEY, ExperienceUKF

HOUSTON_SQL = "SELECT population FROM city WHERE city_name = 'houston'"
SPOT_SQL = "SELECT lowest_point FROM highlow WHERE state_name = 'texas'"
WRONG = "SELECT COUNT(*) FROM river"
OTHER = "SELECT area FROM state WHERE state_name = 'texas'"


def asked(question: str, sql: str | None = None, **fields) -> ExperienceUKF:
    """An unlabeled experience, as the ask path logs a question."""
    return ExperienceUKF.create(
        question, sql, database="geoquery", dialect="sqlite", source="user", **fields
    )


class Asker:
    """Asks through a real pipeline whose samples are scripted per question."""

    def __init__(self, store, db, samples: dict[str, list[str]]) -> None:
        self.samples, self.calls = samples, 0
        self.store, self.db = store, db

    def __call__(self, experience: ExperienceUKF, n: int):
        self.calls += 1
        replies = itertools.cycle(self.samples[experience.question])
        llm = ScriptedLLM([lambda messages, options: sql_reply(next(replies))])
        pipeline = Pipeline(
            store=self.store,
            retriever=IndexSet.build(self.store, HashingEmbedder()).retriever(),
            database=self.db,
            database_name="geoquery",
            tiers=[ModelTier("scripted", llm, samples=n)],
            options=PipelineOptions(log_questions=False),
            confidence=share_confidence(self.store, "geoquery"),
        )
        return pipeline.ask(experience.question, options=AskOptions(n=n))


def test_sure_votes_are_mined_with_unlabeled_trust_and_unsure_ones_refused(geo):
    store, db = geo
    sure = asked("how many people live in houston", WRONG)  # the logged answer was wrong
    split = asked("what is the lowest spot in texas")
    store.upsert_many([sure, split])
    asker = Asker(
        store,
        db,
        {sure.question: [HOUSTON_SQL] * 5, split.question: [SPOT_SQL, SPOT_SQL, OTHER, WRONG]},
    )

    report = mine_unlabeled(store, [sure, split], ask=asker, job_id="u1", targets={"geoquery": db})

    assert asker.calls == 2 and report.miner == "unlabeled"
    assert report.vote is not None
    assert (report.vote["kept"], report.vote["refused"]) == (1, 1)
    assert report.vote["refused_by"] == {"low agreement": 1}
    assert [s["experience_id"] for s in report.skipped] == [split.id]
    assert "low agreement" in report.skipped[0]["reason"]
    mined = candidates(store, job_id="u1")
    assert mined and all(e.parents == [sure.id] for e in mined)
    assert {e.metadata[MINING_KEY]["trust"] for e in mined} == {"unlabeled"}
    assert {e.metadata[MINING_KEY]["miner"] for e in mined} == {"unlabeled"}
    assert any(e.type == "synonym" and e.name == "houston" for e in mined) or any(
        "houston" in str(e.content_resources) for e in mined
    )
    # the experience stays unlabeled, unverified, with the SQL it was answered with
    stored = store.get(sure.id)
    assert isinstance(stored, ExperienceUKF)
    assert not stored.labeled and not stored.verified and stored.sql == WRONG
    assert stored.metadata[VOTE]["sql"].startswith("SELECT population FROM city")
    vote = vote_of(store, split.id)
    assert vote is not None and vote.share == pytest.approx(0.6) and vote.distinct == 3
    # looser thresholds decide from the remembered vote: kept now, not asked again
    loose = VoteThresholds(min_share=0.6, min_confidence=0.6)
    again = mine_unlabeled(store, [store.get(split.id)], ask=asker, thresholds=loose)
    assert asker.calls == 2 and again.vote["remembered"] == 1 and again.vote["kept"] == 1


def test_remembered_votes_are_not_asked_again_and_re_mining_adds_nothing(geo):
    store, db = geo
    sure = asked("how many people live in houston")
    store.upsert(sure)
    asker = Asker(store, db, {sure.question: [HOUSTON_SQL] * 5})
    first = mine_unlabeled(store, [sure], ask=asker, job_id="u1")
    again = mine_unlabeled(store, unlabeled_experiences(store), ask=asker, job_id="u2")

    assert asker.calls == 1 and again.vote["remembered"] == 1 and again.vote["asked"] == 0
    assert first.candidate_ids and again.candidate_ids == []
    assert again.merge.get("inserted", 0) == 0
    # a vote of fewer samples than now asked for is asked again
    more = mine_unlabeled(store, [store.get(sure.id)], ask=asker, thresholds=VoteThresholds(7))
    assert asker.calls == 2 and more.vote["asked"] == 1


def test_empty_results_failures_and_wrong_marked_questions_are_refused(geo):
    store, db = geo
    empty = asked("how many people live in atlantis")
    broken = asked("how many people live in paris")
    marked = asked(
        "how many people live in dallas",
        content_resources={"answers": {"a1": {"sql": WRONG, "verdict": "wrong"}}},
    )
    elsewhere = ExperienceUKF.create("how many singers", database="concert_singer")
    store.upsert_many([empty, broken, marked, elsewhere])
    asker = Asker(
        store,
        db,
        {
            empty.question: ["SELECT population FROM city WHERE city_name = 'atlantis'"],
            broken.question: ["SELECT population FROM no_such_table"],
        },
    )

    report = mine_unlabeled(
        store, [empty, broken, marked, elsewhere], ask=asker, databases=["geoquery"]
    )

    reasons = {s["experience_id"]: s["reason"] for s in report.skipped}
    assert reasons[empty.id] == "the voted result is empty"
    assert reasons[broken.id].startswith("the vote gave no answer")
    assert reasons[marked.id] == "an answer to it was marked wrong"
    assert reasons[elsewhere.id] == "no target to ask on for database 'concert_singer'"
    assert asker.calls == 2 and report.candidate_ids == []


def test_labeled_experiences_are_left_to_the_labeled_miner(geo):
    store, db = geo
    gold = labeled(*NC)
    store.upsert(gold)
    assert unlabeled_experiences(store) == []
    report = mine_unlabeled(store, [gold], ask=Asker(store, db, {}))
    assert report.skipped[0]["reason"].startswith("labeled")
    assert mine_labeled(store, [gold]).mined_experiences == 1


def test_a_cancelled_vote_keeps_what_was_voted_and_mines_nothing(geo):
    store, db = geo
    first = asked("how many people live in houston")
    second = asked("how many people live in austin")
    store.upsert_many([first, second])
    asker = Asker(store, db, {first.question: [HOUSTON_SQL] * 5})

    def ask(experience, n):
        if experience.id == second.id:
            raise LLMCancelledError("the job was cancelled")
        return asker(experience, n)

    with pytest.raises(LLMCancelledError):
        mine_unlabeled(store, [first, second], ask=ask, job_id="u1")
    assert vote_of(store, first.id) is not None and vote_of(store, second.id) is None
    assert candidates(store, job_id="u1") == []
    asker.samples[second.question] = ["SELECT population FROM city WHERE city_name = 'austin'"]
    current = [store.get(first.id), store.get(second.id)]
    resumed = mine_unlabeled(store, current, ask=asker, job_id="u2")
    assert (resumed.vote["remembered"], resumed.vote["asked"]) == (1, 1) and asker.calls == 2
    assert resumed.candidate_ids


def test_a_cancelled_token_stops_before_the_next_vote_and_forgets_a_stopped_one(geo):
    store, db = geo
    first = asked("how many people live in houston")
    second = asked("how many people live in austin")
    store.upsert_many([first, second])
    token = Cancellation()
    asker = Asker(store, db, {first.question: [HOUSTON_SQL] * 5})

    def ask(experience, n):
        answer = asker(experience, n)
        token.cancel("the job was cancelled")  # during the first vote: it is no vote
        return answer

    with pytest.raises(LLMCancelledError, match="the job was cancelled"):
        mine_unlabeled(store, [first, second], ask=ask, cancellation=token)
    assert asker.calls == 1 and vote_of(store, first.id) is None


def test_thresholds_are_checked():
    with pytest.raises(ValueError, match="min_share"):
        VoteThresholds(min_share=1.5)
    with pytest.raises(ValueError, match="min_ran"):
        VoteThresholds(samples=3, min_ran=4)
    vote = Vote("SELECT 1", share=0.6, confidence=0.6, samples=5, ran=5, distinct=2, row_count=1)
    assert vote.refusal(VoteThresholds(min_share=0.6, min_confidence=0.6)) is None
    assert "low confidence" in vote.refusal(VoteThresholds(min_share=0.6, min_confidence=0.7))


def test_an_answer_using_knowledge_mined_by_the_vote_says_so(geo):
    store, db = geo
    sure = asked("how many people live in houston")
    store.upsert(sure)
    asker = Asker(store, db, {sure.question: [HOUSTON_SQL] * 5})
    report = mine_unlabeled(store, [sure], ask=asker, job_id="u1")
    activate(store, report.candidate_ids)
    asker.samples["what is the population of houston"] = [HOUSTON_SQL]

    answer = asker(asked("what is the population of houston"), 1)

    mined = [k for k in answer.knowledge if k.id in report.candidate_ids]
    assert mined and {k.mined for k in mined} == {"unlabeled"}
    assert all(k.mined is None for k in answer.knowledge if k.id not in report.candidate_ids)
