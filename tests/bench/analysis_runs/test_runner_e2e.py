"""The analysis runner with the real embedded model (0.5B) on one InsightBench task: the
real chain writes each sub-question's SQL on the task's SQLite database, the analyst plans
and writes the narrative. The structure is asserted (findings cite evidence that exists,
every finding passes the number check, the judge reads the answer), not the text."""

from __future__ import annotations

import pytest

from agents.analysis.numbers import known_numbers, unsupported_number
from agents.llm.llamacpp import LlamaCppLLM
from bench.analysis_runs.runner import ANSWERS, run_tasks
from bench.analysis_runs.summary import summarize
from bench.analysis_runs.systems import AnalysisSystem, RunBounds
from bench.datasets.insightbench import load_insightbench
from bench.judge.answers import read_insight_answers

pytestmark = pytest.mark.slow  # the real model plans, writes SQL and the narrative


def test_the_embedded_model_analyses_an_insightbench_task(embedded_model_path, tmp_path):
    try:
        [task] = load_insightbench(cache_dir=tmp_path / "db", limit=1)
    except FileNotFoundError:
        pytest.skip("InsightBench is not on this machine")
    llm = LlamaCppLLM(str(embedded_model_path), n_ctx=8192, n_threads=2, seed=11)
    bounds = RunBounds(max_steps=2, time_budget_s=240, ask_deadline_s=90)
    [record] = run_tasks([task], AnalysisSystem("almanac-analysis", bounds, llm=llm), tmp_path)

    assert record.error is None, record.error
    analysis = record.analysis
    assert analysis["type"] != "lookup" and analysis["plan"] is not None
    evidence = {e["id"]: e for e in analysis["evidence"]}
    asked = [e for e in evidence.values() if not (e["error"] or "").startswith("not asked")]
    assert 1 <= record.sql_calls == len(asked) <= 2
    assert any(e["rows"] and not e["error"] for e in evidence.values()), evidence
    assert analysis["findings"] and record.insights
    assert record.insights == [f["text"] for f in analysis["findings"]]
    facts = known_numbers([v for f in analysis["facts"] for v in _leaves(f)] + [task.goal])
    for finding in analysis["findings"]:
        assert finding["evidence"] and all(i in evidence for i in finding["evidence"])
        rows = [c for i in finding["evidence"] for r in evidence[i]["rows"] for c in r]
        assert unsupported_number(finding["text"], known_numbers(rows) + facts) is None
    [judged] = read_insight_answers(tmp_path / ANSWERS)
    assert judged.task_id == task.id and judged.summary == analysis["short_answer"]
    assert summarize([record])["sql_calls"]["mean"] == record.sql_calls


def _leaves(value):
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]
