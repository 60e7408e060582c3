"""End to end with the real embedded model as the judge, on one real InsightBench task."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from bench.agent_workspace import ModelChoice, load_llm
from bench.datasets.insightbench import load_task
from bench.judge.answers import InsightAnswer
from bench.judge.core import JudgeLog
from bench.judge.insightbench import score_task
from tests.bench.judge.test_insightbench_loader import ROOT, needs_data


@pytest.mark.slow
@needs_data
def test_real_model_judges_one_insightbench_task(embedded_model_path: Path, tmp_path: Path) -> None:
    task = load_task(ROOT / "flag-1.json", tmp_path)
    task = replace(task, insights=task.insights[:2])  # two ground truths keep it short
    answer = InsightAnswer(
        task.id,
        (task.insights[0].text, "The weather was sunny all year."),
        "Hardware incidents dominate.",
    )
    judge = load_llm(str(embedded_model_path), ModelChoice())

    with JudgeLog(tmp_path / "judge.jsonl") as judge_log:
        scores = score_task(task, answer, judge, judge_log, top_k=1)

    records = [json.loads(line) for line in (tmp_path / "judge.jsonl").read_text().splitlines()]
    assert len(records) == 3  # one pair per ground truth, and the summary
    assert all(r["reply"] for r in records)  # the model answered each
    # the schema bounds the reason, so the model closes its JSON: every verdict parses
    assert [r["error"] for r in records] == [None, None, None]
    assert 0.0 <= scores.judge_insight <= 1.0 and 0.0 <= scores.judge_summary <= 1.0
    # the first ground truth was predicted word for word: ROUGE-1 is 1 for it
    assert scores.rouge_matrix[0][0] == pytest.approx(1.0)
