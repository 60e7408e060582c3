"""Abstention and adaptive sampling through the whole chain, with scripted models."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest

from agents.confidence.assess import CalibratorSource, ConfidenceAssessor, ConfidenceOptions
from agents.confidence.calibrator import FittedOn, prior_calibrator
from agents.pipeline import AskOptions, ModelTier, Pipeline
from indices.embeddings import HashingEmbedder
from indices.index_set import IndexSet
from tests.agents.scripted import ScriptedLLM, ScriptedTogetherLLM, sql_reply
from ukf import ExperienceUKF, SynonymUKF


def _pipeline(concert, tiers, calibrator, **options) -> Pipeline:
    store, database, _ = concert
    return Pipeline(
        store=store,
        retriever=IndexSet.build(store, HashingEmbedder()).retriever(),
        database=database,
        database_name="concert_singer",
        tiers=tiers,
        confidence=ConfidenceAssessor(
            store,
            "concert_singer",
            calibrators=CalibratorSource(fallback=calibrator),
            options=ConfidenceOptions(**options),
        ),
    )


@dataclass
class RuleCalibrator:
    """Confidence from two signals: the vote share once several samples voted, else 0.9
    for a question whose words the database covers and 0.3 for one it does not."""

    method: str = "rule"
    version: int = 1
    source: str = "test"
    fitted_on: FittedOn = FittedOn(0, 0)  # noqa: RUF009 - frozen, shared safely

    def predict(self, features: dict[str, float]) -> float:
        if "vote_share" in features:
            return features["vote_share"]
        return 0.9 if features.get("span_coverage", 0.0) == 1.0 else 0.3


def test_an_unanswerable_question_abstains_with_its_reason_and_withholds_rows(concert):
    llm = ScriptedLLM([sql_reply("SELECT avg(age) FROM singer")])
    pipeline = _pipeline(concert, [ModelTier("m", llm)], prior_calibrator(), abstain_below=0.5)
    answer = pipeline.ask("What is the average salary of singers?")
    assert answer.abstained and answer.confidence < 0.5 and answer.calibrator.startswith("prior")
    assert answer.sql == "SELECT avg(age) FROM singer" and answer.rows == []
    assert answer.withheld_rows == 1 and answer.row_count == 1
    assert "nothing in the database concert_singer matches 'salary'" in answer.abstention.reasons
    assert answer.abstention.clarification is None
    logged = concert[0].get(answer.experience_id).content_resources
    record = logged["answers"][answer.id]
    assert record["signals"]["unmatched_content_words"] == 1.0 and logged["abstained"]

    kept = pipeline.ask("What is the average salary of singers?", options=AskOptions(abstain=False))
    assert not kept.abstained and kept.rows and kept.confidence == answer.confidence


def test_a_covered_question_is_answered(concert):
    llm = ScriptedLLM([sql_reply("SELECT count(*) FROM singer WHERE country = 'France'")])
    pipeline = _pipeline(concert, [ModelTier("m", llm)], prior_calibrator(), abstain_below=0.5)
    answer = pipeline.ask("How many singers are from France?")
    assert not answer.abstained and answer.abstention is None and answer.rows == [[4]]
    assert answer.confidence > 0.5 and answer.signals["span_coverage"] == 1.0


def test_an_abstention_offers_the_nearest_questions_the_knowledge_base_can_answer(concert):
    store = concert[0]
    store.upsert(
        ExperienceUKF.create(
            "What is the average age of singers?",
            "SELECT avg(age) FROM singer",
            database="concert_singer",
            labeled=True,
        )
    )
    llm = ScriptedLLM([sql_reply("SELECT avg(age) FROM singer")])
    pipeline = _pipeline(concert, [ModelTier("m", llm)], prior_calibrator(), abstain_below=0.5)
    answer = pipeline.ask("What is the average salary of singers?")
    assert answer.abstained
    assert answer.abstention.suggestions == ["What is the average age of singers?"]


def test_two_meanings_of_a_phrase_ask_which_was_meant(concert):
    store = concert[0]
    columns = {
        (e.content_resources["table"], e.content_resources["column"]): e
        for e in store.iterate(type="column")
    }
    store.upsert_many(
        [
            SynonymUKF.create(
                "size", columns[("singer", "Age")], database="concert_singer", variant="age"
            ),
            SynonymUKF.create(
                "size", columns[("stadium", "Capacity")], database="concert_singer", variant="cap"
            ),
        ]
    )
    llm = ScriptedLLM([sql_reply("SELECT max(capacity) FROM stadium")])
    pipeline = _pipeline(concert, [ModelTier("m", llm)], RuleCalibrator(), abstain_below=0.95)
    answer = pipeline.ask("What is the biggest size?")
    assert answer.abstained
    clarification = answer.abstention.clarification
    assert clarification is not None and clarification.phrase == "size"
    assert {o.meaning for o in clarification.options} == {"Age", "Capacity"}
    assert "What do you mean by 'size'" in clarification.question
    assert "'size' has 2 meanings in the knowledge base" in answer.abstention.reasons


def test_adaptive_sampling_stops_at_the_greedy_answer_of_an_easy_question(concert):
    llm = ScriptedLLM([sql_reply("SELECT count(*) FROM singer WHERE country = 'France'")])
    pipeline = _pipeline(concert, [ModelTier("m", llm)], RuleCalibrator(), adaptive=True)
    answer = pipeline.ask("How many singers are from France?")
    assert answer.samples == 1 and len(llm.calls) == 1 and answer.confidence == 0.9
    (check,) = _adaptive_checks(answer)  # the greedy answer's, which stopped the sampling
    assert (check["samples"], check["confidence"]) == (1, 0.9)
    assert 0 < check["at_s"] <= answer.seconds


def test_adaptive_sampling_spends_its_budget_on_a_hard_question(concert):
    replies = itertools.cycle(
        ["SELECT count(*) FROM singer", "SELECT count(*) FROM stadium", "SELECT 7"]
    )
    llm = ScriptedLLM([lambda _m, _o: sql_reply(next(replies))])
    pipeline = _pipeline(
        concert, [ModelTier("m", llm)], RuleCalibrator(), adaptive=True, max_samples=5, target=0.8
    )
    answer = pipeline.ask("How many wombats sing?")  # 'wombats' unmatched: 0.3 at first
    assert answer.samples == 5 and len(llm.calls) == 5
    assert answer.vote_share == 0.4 and answer.confidence == 0.4


def test_adaptive_sampling_stops_once_the_samples_agree_enough(concert):
    replies = iter(["SELECT count(*) FROM stadium", "SELECT count(*) FROM singer"])
    llm = ScriptedLLM([lambda _m, _o: sql_reply(next(replies, "SELECT count(*) FROM singer"))])
    pipeline = _pipeline(
        concert, [ModelTier("m", llm)], RuleCalibrator(), adaptive=True, target=0.6
    )
    answer = pipeline.ask("How many wombats sing?")
    # greedy 0.3; two samples split 0.5; the third makes 2/3 >= 0.6
    assert answer.samples == 3 and answer.confidence >= 0.6
    checks = _adaptive_checks(answer)  # why it drew more: each check's count and confidence
    assert [c["samples"] for c in checks] == [1, 2, 3]
    assert checks[0]["confidence"] < 0.6 <= checks[-1]["confidence"]
    assert [c["at_s"] for c in checks] == sorted(c["at_s"] for c in checks)


def _adaptive_checks(answer) -> list[dict[str, float]]:
    (generate,) = [s for s in answer.stages if s.stage == "generate"]
    return generate.detail["adaptive"]


def test_an_explicit_n_still_draws_n(concert):
    llm = ScriptedLLM([sql_reply("SELECT count(*) FROM singer")])
    pipeline = _pipeline(concert, [ModelTier("m", llm)], RuleCalibrator(), adaptive=True)
    answer = pipeline.ask("How many singers are there?", options=AskOptions(n=3, adaptive=False))
    assert answer.samples == 3 and answer.vote_share == 1.0
    (generate,) = [s for s in answer.stages if s.stage == "generate"]
    assert "adaptive" not in generate.detail  # no stop rule, no trace


def test_the_cascade_escalates_while_unsure_and_stops_when_sure(concert):
    small = ScriptedLLM([lambda _m, _o: sql_reply("SELECT 1")], name="small")
    large = ScriptedLLM([sql_reply("SELECT count(*) FROM singer")], name="large")
    calibrator = RuleCalibrator()
    pipeline = _pipeline(
        concert,
        [ModelTier("small", small, samples=2), ModelTier("large", large)],
        calibrator,
        adaptive=True,
        max_samples=3,
        target=0.8,
    )
    easy = pipeline.ask("How many singers are there?", options=AskOptions(cascade=True))
    # a tier before the last answers once two of its samples agree and the rule is satisfied:
    # its greedy answer alone, however confident, is not enough (the calibrator was fitted
    # on the default model's answers)
    assert easy.tier == "small" and len(small.calls) == 2 and not large.calls
    hard = pipeline.ask("How many wombats sing?", options=AskOptions(cascade=True))
    # the small tier's two samples agree: share 1.0 is confident enough
    assert hard.tier == "small" and len(small.calls) == 4

    split = itertools.cycle(["SELECT 1", "SELECT 2"])
    small.replies = [lambda _m, _o: sql_reply(next(split))]
    small.calls.clear()
    unsure = pipeline.ask("How many wombats dance?", options=AskOptions(cascade=True))
    assert len(small.calls) == 2 and large.calls  # 1/2 agreement: escalated
    assert unsure.tier == "large"


@pytest.mark.parametrize("escalation_target, answered_by", [(0.8, "large"), (0.6, "small")])
def test_a_tier_before_the_last_needs_the_escalation_target(
    concert, escalation_target, answered_by
):
    replies = itertools.cycle(["SELECT 1", "SELECT 2", "SELECT 1"])  # 2 of 3 agree: 0.67
    small = ScriptedLLM([lambda _m, _o: sql_reply(next(replies))], name="small")
    large = ScriptedLLM([sql_reply("SELECT count(*) FROM singer")], name="large")
    pipeline = _pipeline(
        concert,
        [ModelTier("small", small, samples=3), ModelTier("large", large)],
        RuleCalibrator(),
        adaptive=True,
        max_samples=3,
        target=0.1,
        escalation_target=escalation_target,
    )
    answer = pipeline.ask("How many wombats sing?", options=AskOptions(cascade=True))
    assert answer.tier == answered_by and len(small.calls) == 3
    if answered_by == "large":  # its greedy answer (0.3) reaches the target 0.1: one call
        assert len(large.calls) == 1 and answer.sql == "SELECT count(*) FROM singer"
        checks = _adaptive_checks(answer)
        assert [c["confidence"] for c in checks][-2:] == [0.6667, 0.3]
    else:
        assert not large.calls and answer.sql == "SELECT 1"


def test_the_escalation_target_is_checked_like_the_target():
    with pytest.raises(ValueError, match="escalation_target"):
        ConfidenceOptions(escalation_target=1.2)


def test_an_unsure_greedy_answer_gets_the_rest_of_the_budget_decoded_together(concert):
    replies = itertools.cycle(["SELECT count(*) FROM singer", "SELECT count(*) FROM stadium"])
    llm = ScriptedTogetherLLM([lambda _m, _o: sql_reply(next(replies))], sequences=5)
    pipeline = _pipeline(
        concert, [ModelTier("m", llm)], RuleCalibrator(), adaptive=True, max_samples=5, target=0.5
    )
    sure = pipeline.ask("How many singers are from France?")
    assert sure.samples == 1 and llm.batches == []  # greedy alone, confident: nothing more
    unsure = pipeline.ask("How many wombats sing?")
    assert unsure.samples == 5 and [len(batch) for batch in llm.batches] == [4]
