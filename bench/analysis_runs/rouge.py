"""ROUGE-1 of a run's answers against InsightBench's ground truth, without the LLM judge.

The same measure as the judge's (:mod:`bench.judge.insightbench`: each ground-truth insight's
best ROUGE-1 F over the predicted insights, averaged per task; the summary against the
ground-truth summary), so a run reports it at once; the LLM-judge scores come from
``python -m bench judge insightbench``. A task that failed scores 0, as the judge scores it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.analysis_runs.records import TaskRecord
from bench.datasets.insightbench import InsightTask
from bench.judge.core import mean
from bench.judge.insightbench import insight_level, rouge1


def task_rouge(task: InsightTask, record: TaskRecord) -> dict[str, float | None]:
    """Insight-level (None: the task has no ground-truth insight) and summary-level ROUGE-1."""
    truth = [insight.text for insight in task.insights]
    matrix: list[list[float | None]] = [[rouge1(gt, p) for p in record.insights] for gt in truth]
    summary = rouge1(task.summary, record.summary) if record.summary else 0.0
    return {"insight": insight_level(matrix), "summary": summary}


def rouge_scores(tasks: Sequence[InsightTask], records: Sequence[TaskRecord]) -> dict[str, Any]:
    """The mean insight-level and summary-level ROUGE-1 over the tasks that have a record."""
    by_id = {task.id: task for task in tasks}
    scored = [task_rouge(by_id[r.task_id], r) for r in records if r.task_id in by_id]
    insight = mean([s["insight"] for s in scored if s["insight"] is not None])
    summary = mean([s["summary"] for s in scored if s["summary"] is not None])
    return {
        "tasks": len(scored),
        "rouge1_insight": round(insight, 4) if insight is not None else None,
        "rouge1_summary": round(summary, 4) if summary is not None else None,
    }
