"""The InsightBench protocol: insight-level and summary-level scores, by LLM judge and ROUGE-1.

Insight level: every ground-truth insight is compared with every predicted one, by the judge
(a semantic-match score in [0, 1]) and by ROUGE-1 F (``rouge_score``); each ground-truth
insight keeps its best match under each measure, and the task's score is the mean of those
bests (:func:`insight_level`). Summary level: the predicted summary against the ground-truth
one, by the judge and by ROUGE-1.

A judge call that fails or whose reply cannot be parsed scores 0 (and is counted in
``failed_calls``). A task without ground-truth insights (flag-36) has no insight-level
score (None, left out of the means); a task without an answer scores 0 everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

from bench.datasets.insightbench import InsightTask
from bench.judge.answers import InsightAnswer
from bench.judge.core import REASON, Judge, JudgeLog, ask, mean, number_in

PROTOCOL = "insightbench"
SCORE_SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "number"}, "reason": REASON},
    "required": ["score"],
}


@cache
def _scorer() -> Any:
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)


def rouge1(reference: str, prediction: str) -> float:
    """ROUGE-1 F-measure of ``prediction`` against ``reference`` (Porter-stemmed unigrams)."""
    return float(_scorer().score(reference, prediction)["rouge1"].fmeasure)


def best_scores(matrix: list[list[float | None]]) -> list[float]:
    """Each row's (ground-truth insight's) best score over the predictions; a failed cell
    (None) counts 0, a row with no predictions scores 0."""
    return [max((cell or 0.0 for cell in row), default=0.0) for row in matrix]


def insight_level(matrix: list[list[float | None]]) -> float | None:
    """The mean of the per-ground-truth best scores; None when there is no ground truth."""
    return mean(best_scores(matrix))


@dataclass
class InsightScores:
    """One task's scores. ``judge_matrix[g][p]``: the judge's score of predicted insight p
    for ground-truth insight g (None: failed or not judged); ``rouge_matrix`` likewise."""

    task_id: str
    judge_insight: float | None
    rouge_insight: float | None
    judge_summary: float
    rouge_summary: float
    ground_truth: int
    predicted: int
    failed_calls: int = 0
    answered: bool = True
    judge_matrix: list[list[float | None]] = field(default_factory=list)
    rouge_matrix: list[list[float]] = field(default_factory=list)


def _score(reply: Any) -> float:
    return number_in(reply, "score", 0.0, 1.0)


def score_task(
    task: InsightTask,
    answer: InsightAnswer | None,
    judge: Judge,
    judge_log: JudgeLog,
    *,
    top_k: int | None = None,
) -> InsightScores:
    """Score one task's answer (None: no answer, everything 0).

    ``top_k``: judge only each ground-truth insight's ``top_k`` best predictions by ROUGE-1
    (None: all of them), to bound the judge calls on long answers.
    """
    predicted = list(answer.insights) if answer else []
    truth = [insight.text for insight in task.insights]
    rouge = [[rouge1(gt, p) for p in predicted] for gt in truth]
    judged: list[list[float | None]] = []
    failed = 0
    for g, gt in enumerate(truth):
        order = sorted(range(len(predicted)), key=lambda p: -rouge[g][p])
        chosen = set(order if top_k is None else order[:top_k])
        row: list[float | None] = []
        for p, prediction in enumerate(predicted):
            if p not in chosen:
                row.append(None)
                continue
            verdict = ask(
                judge,
                judge_log,
                protocol=PROTOCOL,
                item=f"{task.id}/insight-{g}/pred-{p}",
                step="insight",
                template="insightbench_insight.j2",
                parse=_score,
                schema=SCORE_SCHEMA,
                goal=task.goal,
                truth=gt,
                prediction=prediction,
            )
            failed += not verdict.ok
            row.append(verdict.value)
        judged.append(row)
    summary = answer.summary if answer else ""
    judge_summary = 0.0
    if summary:
        verdict = ask(
            judge,
            judge_log,
            protocol=PROTOCOL,
            item=f"{task.id}/summary",
            step="summary",
            template="insightbench_summary.j2",
            parse=_score,
            schema=SCORE_SCHEMA,
            goal=task.goal,
            truth=task.summary,
            prediction=summary,
        )
        failed += not verdict.ok
        judge_summary = verdict.value or 0.0
    return InsightScores(
        task_id=task.id,
        judge_insight=insight_level(judged),
        rouge_insight=insight_level(rouge),  # type: ignore[arg-type]
        judge_summary=judge_summary,
        rouge_summary=rouge1(task.summary, summary) if summary else 0.0,
        ground_truth=len(truth),
        predicted=len(predicted),
        failed_calls=failed,
        answered=answer is not None,
        judge_matrix=judged,
        rouge_matrix=rouge,
    )


def aggregate(scores: list[InsightScores]) -> dict[str, Any]:
    """The run's means over tasks (insight level over the tasks that have ground truth)."""

    def over(name: str) -> float | None:
        return mean([v for s in scores if (v := getattr(s, name)) is not None])

    return {
        "tasks": len(scores),
        "answered": sum(s.answered for s in scores),
        "judge_insight": over("judge_insight"),
        "rouge_insight": over("rouge_insight"),
        "judge_summary": over("judge_summary"),
        "rouge_summary": over("rouge_summary"),
        "failed_calls": sum(s.failed_calls for s in scores),
    }
