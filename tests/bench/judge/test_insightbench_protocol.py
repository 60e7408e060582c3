"""InsightBench scoring with a scripted judge: known verdicts give hand-computed scores."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.datasets.insightbench import Insight, InsightTask
from bench.judge.answers import InsightAnswer
from bench.judge.core import JudgeLog
from bench.judge.insightbench import aggregate, best_scores, rouge1, score_task
from tests.bench.judge.judges import GARBAGE, by_prompt

TRUTH = ["sales rose in march", "the cat sat on the mat"]
PREDICTED = ["sales fell in march", "the cat lay on the mat", "nothing here"]
# the judge's score of (ground truth, prediction); None: a garbage reply
VERDICTS = {
    (0, 0): 0.9,
    (0, 1): 0.1,
    (0, 2): None,
    (1, 0): 0.0,
    (1, 1): 0.6,
    (1, 2): 0.7,
}


def task(task_id: str = "flag-1") -> InsightTask:
    return InsightTask(
        id=task_id,
        goal="Explain the sales",
        role="Analyst",
        category="Sales",
        description="",
        insights=tuple(Insight(text, "descriptive") for text in TRUTH),
        summary="sales rose",
        database_path=Path("unused.sqlite"),
        tables=(),
    )


def decide(prompt: str) -> object:
    if "Predicted summary:" in prompt:
        return {"score": 0.5}
    truth = next(g for g, text in enumerate(TRUTH) if f"insight:\n{text}" in prompt)
    pred = next(p for p, text in enumerate(PREDICTED) if f"Predicted insight:\n{text}" in prompt)
    score = VERDICTS[(truth, pred)]
    return GARBAGE if score is None else {"score": score, "reason": "scripted"}


ANSWER = InsightAnswer("flag-1", tuple(PREDICTED), "sales rose sharply")


def test_rouge1_on_a_hand_checked_pair() -> None:
    # 5 of 6 unigrams shared ("the" twice, cat, on, mat): P = R = F = 5/6
    assert rouge1("the cat sat on the mat", "the cat lay on the mat") == pytest.approx(5 / 6)
    # "sales rose" in "sales rose sharply": P = 2/3, R = 1, F = 0.8
    assert rouge1("sales rose", "sales rose sharply") == pytest.approx(0.8)


def test_best_match_per_ground_truth_by_judge_and_by_rouge() -> None:
    judge_log = JudgeLog()
    scores = score_task(task(), ANSWER, by_prompt(decide), judge_log)

    assert scores.judge_matrix == [[0.9, 0.1, None], [0.0, 0.6, 0.7]]
    assert scores.judge_insight == pytest.approx((0.9 + 0.7) / 2)
    assert scores.rouge_insight == pytest.approx((0.75 + 5 / 6) / 2)
    assert scores.judge_summary == 0.5
    assert scores.rouge_summary == pytest.approx(0.8)
    assert scores.failed_calls == 1
    assert len(judge_log.records) == 7  # 2 x 3 pairs and the summary
    garbage = [r for r in judge_log.records if r["error"]]
    assert len(garbage) == 1 and garbage[0]["reply"] == GARBAGE


def test_top_k_judges_only_the_best_by_rouge() -> None:
    judge = by_prompt(decide)
    scores = score_task(task(), ANSWER, judge, JudgeLog(), top_k=1)

    assert scores.judge_matrix == [[0.9, None, None], [None, 0.6, None]]
    assert scores.judge_insight == pytest.approx(0.75)
    assert len(judge.calls) == 3


def test_unanswered_and_all_garbage_tasks_score_zero_and_the_run_goes_on() -> None:
    judge_log = JudgeLog()
    garbage = by_prompt(lambda prompt: GARBAGE)
    scores = [
        score_task(task("flag-1"), ANSWER, by_prompt(decide), judge_log),
        score_task(task("flag-2"), None, garbage, judge_log),
        score_task(task("flag-3"), ANSWER, garbage, judge_log),
    ]

    assert (scores[1].judge_insight, scores[1].answered, scores[1].rouge_summary) == (0, False, 0)
    assert scores[2].judge_insight == 0.0 and scores[2].failed_calls == 7
    summary = aggregate(scores)
    assert summary["tasks"] == 3 and summary["answered"] == 2
    assert summary["judge_insight"] == pytest.approx(0.8 / 3)
    assert summary["judge_summary"] == pytest.approx(0.5 / 3)
    assert summary["failed_calls"] == 8


def test_task_without_ground_truth_has_no_insight_score() -> None:
    empty = InsightTask("flag-36", "g", "r", "c", "", (), "sum", Path("x"), ())
    scores = score_task(empty, ANSWER, by_prompt(decide), JudgeLog())

    assert scores.judge_insight is None and scores.rouge_insight is None
    assert best_scores([]) == []
