"""CORGI scoring with a scripted judge: chosen dimensions, 0/3/5 scores, SQL success rate."""

from __future__ import annotations

import pytest

from bench.judge.answers import AnalysisAnswer, Evidence
from bench.judge.core import JudgeLog
from bench.judge.corgi import DIMENSIONS, aggregate, dimension_mean, score_answer, sql_success_rate
from tests.bench.judge.judges import GARBAGE, by_prompt

ANSWER = AnalysisAnswer(
    id="q1",
    question="Why did Aurora's margin fall in Q3?",
    type="diagnostic",
    short_answer="Margin fell 4 points, driven by EMEA discounts.",
    findings=("EMEA discounts doubled in Q3.",),
    evidence=(
        Evidence("SELECT 1", None, "q1"),
        Evidence("SELECT x FROM nowhere", "no such table: nowhere", "q2"),
        Evidence("SELECT 2", None, "q3"),
    ),
)


def scripted(pick: object, scores: dict[str, object]):
    def decide(prompt: str) -> object:
        if "Which evaluation dimensions apply" in prompt:
            return pick
        name = prompt.split("Score the answer on one dimension only, ")[1].split(":")[0]
        return scores[name]

    return by_prompt(decide)


def test_chosen_dimensions_scored_and_averaged() -> None:
    judge = scripted(
        {"dimensions": ["structure", "data sense", "insightfulness", "bogus"]},
        {"structure": {"score": 5}, "data sense": {"score": 3}, "insightfulness": GARBAGE},
    )
    judge_log = JudgeLog()

    scores = score_answer(ANSWER, judge, judge_log)

    assert scores.dimensions == {"structure": 5, "data_sense": 3, "insightfulness": None}
    assert scores.score == pytest.approx((5 + 3 + 0) / 3)
    assert scores.sql_success == pytest.approx(2 / 3)
    assert scores.failed_calls == 1 and not scores.discriminator_failed
    assert [r["step"] for r in judge_log.records] == [
        "discriminator",
        "score:structure",
        "score:data_sense",
        "score:insightfulness",
    ]
    prompt = judge.calls[1][0][-1]["content"]
    assert "- 5: fully meets it" in prompt and "- 3: partly" in prompt and "- 0: does not" in prompt
    assert "SELECT x FROM nowhere" in prompt and "diagnostic" in prompt


def test_garbage_discriminator_falls_back_to_all_dimensions() -> None:
    every = {name.replace("_", " "): {"score": 3} for name in DIMENSIONS}
    scores = score_answer(ANSWER, scripted(GARBAGE, every), JudgeLog())

    assert scores.discriminator_failed and list(scores.dimensions) == list(DIMENSIONS)
    assert scores.score == 3.0 and scores.failed_calls == 1


def test_off_anchor_score_is_a_failed_call() -> None:
    judge = scripted({"dimensions": ["compliance"]}, {"compliance": {"score": 4}})
    judge_log = JudgeLog()

    scores = score_answer(ANSWER, judge, judge_log)

    assert scores.dimensions == {"compliance": None} and scores.score == 0.0
    assert "not one of [0, 3, 5]" in judge_log.records[-1]["error"]


def test_pure_scores_and_aggregate() -> None:
    assert sql_success_rate([]) is None
    assert dimension_mean({"structure": 5, "compliance": None}) == 2.5
    first = score_answer(
        ANSWER, scripted({"dimensions": ["structure"]}, {"structure": {"score": 5}}), JudgeLog()
    )
    other = AnalysisAnswer(id="q2", question="What will sales be?", type="predictive")
    second = score_answer(
        other, scripted({"dimensions": ["structure"]}, {"structure": {"score": 0}}), JudgeLog()
    )

    summary = aggregate([first, second])

    assert summary["score"] == 2.5 and summary["sql_success"] == pytest.approx(2 / 3)
    assert summary["dimensions"]["structure"] == 2.5 and summary["dimensions"]["compliance"] is None
    assert summary["by_type"]["predictive"]["score"] == 0.0
    assert summary["by_type"]["predictive"]["sql_success"] is None
