"""The analysis runner on two real InsightBench tasks (their SQLite databases, the real chain
and analyst) with a scripted model: the answers the judge reads, resuming, a failing task
recorded while the run goes on, and the one-SQL baseline asking exactly one query."""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import replace

import pytest

from bench.analysis_runs.cli import select_tasks
from bench.analysis_runs.records import TaskRecord, read_records
from bench.analysis_runs.rouge import rouge_scores
from bench.analysis_runs.runner import ANSWERS, run_tasks
from bench.analysis_runs.summary import markdown, summarize, write_summary
from bench.analysis_runs.systems import AnalysisSystem, RunBounds
from bench.datasets.insightbench import load_insightbench
from bench.judge.answers import read_insight_answers
from bench.judge.core import JudgeLog
from bench.judge.insightbench import score_task
from indices.embeddings import HashingEmbedder
from tests.agents.learn.test_gate import knowledge_of
from tests.agents.scripted import ScriptedLLM, sql_reply

INVENTED = "Hardware has 98765 incidents."
SUB_QUESTIONS = [
    "How many incidents are there per category?",
    "How many incidents are there per category, most first?",
]


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    try:
        loaded = load_insightbench(cache_dir=tmp_path_factory.mktemp("ib"), limit=2)
    except FileNotFoundError:
        pytest.skip("InsightBench is not on this machine")
    return loaded


def reply(messages, options) -> str:
    """Routed by the prompt: the plan (two sub-questions), the narrative (a finding without
    numbers, one with an invented number), the typing, else the SQL: incidents per category
    of the task's table."""
    prompt = messages[-1]["content"]
    if "Split the analyst's question" in prompt:
        return json.dumps(
            {"steps": [{"question": q, "purpose": "breakdown"} for q in SUB_QUESTIONS]}
        )
    if "Query results:" in prompt:
        findings = [
            {"text": "Incidents are not spread evenly across categories.", "evidence": ["q1"]},
            {"text": INVENTED, "evidence": ["q1"]},
        ]
        return json.dumps({"short_answer": "Categories differ.", "findings": findings})
    if options.get("json_schema"):  # the typing
        return json.dumps({"type": "descriptive", "reason": "scripted"})
    table = re.findall(r"\bflag_\d+\b", " ".join(m["content"] for m in messages))[0]
    knowledge_of(messages)  # the chain's prompt
    return sql_reply(f"SELECT category, COUNT(*) AS incidents FROM {table} GROUP BY category")


def system(name: str, llm: ScriptedLLM, *, ask_goal: bool = False) -> AnalysisSystem:
    bounds = RunBounds(max_steps=2, time_budget_s=60, ask_deadline_s=30, ask_goal=ask_goal)
    return AnalysisSystem(name, bounds, llm=llm, embedder=HashingEmbedder())


def sql_prompts(llm: ScriptedLLM) -> int:
    return sum(1 for messages, options in llm.calls if not options.get("json_schema"))


def test_the_analyst_answers_tasks_in_the_format_the_judge_reads(tasks, tmp_path):
    llm = ScriptedLLM([reply])
    records = run_tasks(tasks, system("almanac-analysis", llm), tmp_path)
    assert [r.task_id for r in records] == ["flag-1", "flag-2"]
    for record in records:
        assert record.error is None and record.system == "almanac-analysis"
        analysis = record.analysis
        assert analysis["type"] != "lookup" and analysis["plan"] is not None
        assert [e["id"] for e in analysis["evidence"]] == ["q1", "q2"]
        # the plan's sub-questions; the goal itself is not asked (ask_goal=False)
        assert [e["question"] for e in analysis["evidence"]] == SUB_QUESTIONS
        assert record.sql_calls == 2 and all(e["rows"] for e in analysis["evidence"])
        # the invented number was dropped; the finding kept cites evidence that exists
        assert record.insights == ["Incidents are not spread evenly across categories."]
        assert analysis["dropped"][0]["number"] == "98765"
        assert record.summary == "Categories differ." and record.latency_s > 0
    judged = read_insight_answers(tmp_path / ANSWERS)
    assert [(a.task_id, a.insights, a.summary) for a in judged] == [
        (r.task_id, tuple(r.insights), r.summary) for r in records
    ]
    summary = summarize(records)
    assert summary["answered"] == 2 and summary["sql_calls"] == {"mean": 2.0, "p50": 2.0}
    assert summary["latency_s"]["p50"] > 0 and summary["dropped_findings"] == 2
    assert "SQL calls per answer: mean 2" in write_summary(tmp_path, "x", summary).read_text()
    rouge = rouge_scores(tasks, records)
    assert rouge["tasks"] == 2 and 0 < rouge["rouge1_insight"] < 1
    assert 0 < rouge["rouge1_summary"] < 1
    judged_rouge = [
        score_task(t, a, ScriptedLLM(["{}"]), JudgeLog()).rouge_insight
        for t, a in zip(tasks, judged, strict=True)
    ]
    assert rouge["rouge1_insight"] == round(sum(judged_rouge) / 2, 4)  # the judge's measure
    summary["rouge"] = rouge
    assert "ROUGE-1 (2 tasks): insight level" in markdown("x", summary)


def test_the_one_sql_baseline_asks_exactly_one_query(tasks, tmp_path):
    llm = ScriptedLLM([reply])
    [record] = run_tasks(tasks[:1], system("one-sql", llm), tmp_path)
    assert record.error is None and record.sql_calls == 1 and sql_prompts(llm) == 1
    analysis = record.analysis
    assert analysis["plan"] is None and len(analysis["evidence"]) == 1
    assert analysis["evidence"][0]["question"] == tasks[0].goal
    assert not any("Split the analyst's question" in m[-1]["content"] for m, _ in llm.calls)
    # the same narrative writer and number check as the analyst's
    assert record.insights == ["Incidents are not spread evenly across categories."]
    assert analysis["dropped"][0]["number"] == "98765"


def test_a_rerun_answers_only_the_tasks_missing_and_a_cut_line_again(tasks, tmp_path):
    first = run_tasks(tasks[:1], system("one-sql", ScriptedLLM([reply])), tmp_path)
    path = tmp_path / ANSWERS
    with path.open("a") as out:
        out.write('{"task_id": "flag-2", "insi')  # a run killed while writing
    llm = ScriptedLLM([reply])
    again = run_tasks(tasks, system("one-sql", llm), tmp_path)
    assert [r.task_id for r in again] == ["flag-1", "flag-2"] and again[0] == first[0]
    assert sql_prompts(llm) == 1  # flag-2 alone was answered
    assert len(path.read_text().splitlines()) == 2
    assert run_tasks(tasks, system("one-sql", llm), tmp_path) == again
    assert sql_prompts(llm) == 1


def test_a_failing_task_is_recorded_and_the_run_goes_on(tasks, tmp_path):
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(b"this is not a database" * 100)
    bad = replace(tasks[0], id="flag-broken", database_path=broken)
    records = run_tasks([bad, tasks[1]], system("almanac-analysis", ScriptedLLM([reply])), tmp_path)
    assert [r.task_id for r in records] == ["flag-broken", "flag-2"]
    assert records[0].error and "not a database" in records[0].error
    assert records[0].insights == [] and records[1].error is None
    summary = summarize(records)
    assert summary["errors"] == 1 and summary["answered"] == 1
    # the judge still reads the file: the failed task has no insights
    assert read_insight_answers(tmp_path / ANSWERS)[0].insights == ()


def test_a_record_without_findings_offers_its_short_answer_as_the_insight():
    from agents.analysis.models import AnalysisAnswer
    from agents.analysis.typing import QuestionTyping

    answer = AnalysisAnswer(
        question="q", type="descriptive", typing=QuestionTyping(type="descriptive")
    )
    answer.short_answer = "No finding could be made."
    record = TaskRecord.of("flag-9", "one-sql", answer, 1.0)
    assert record.insights == ["No finding could be made."] and record.error is None


def test_tasks_are_chosen_by_id_then_limit(tasks):
    assert [t.id for t in select_tasks(tasks, "flag-2", None)] == ["flag-2"]
    assert [t.id for t in select_tasks(tasks, None, 1)] == ["flag-1"]
    with pytest.raises(ValueError, match="flag-77"):
        select_tasks(tasks, "flag-1,flag-77", None)


def test_a_bad_line_in_the_middle_is_an_error_naming_it(tmp_path):
    path = tmp_path / ANSWERS
    path.write_text('{"oops": 1}\n{"task_id": "flag-1", "system": "one-sql"}\n')
    with pytest.raises(ValueError, match=r"answers.jsonl:1: not a task record"):
        read_records(path)


def test_the_analyze_subcommand_is_wired(tasks, tmp_path, capsys):
    from bench.__main__ import main as bench_main

    args = ["analyze", "insightbench", "--system", "one-sql", "--out", str(tmp_path / "out")]
    database_folder = str(tasks[0].database_path.parent)
    code = bench_main([*args, "--cache", database_folder, "--tasks", "flag-999"])
    assert code == 2 and "unknown task ids: ['flag-999']" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench_main(["analyze", "insightbench", "--system", "nope", "--out", "x"])
    assert "invalid choice: 'nope'" in capsys.readouterr().err


def test_with_ask_goal_the_analyst_asks_the_goal_first(tasks, tmp_path):
    assert RunBounds().ask_goal  # the default: the analyst's evidence holds the baseline's
    llm = ScriptedLLM([reply])
    [record] = run_tasks(tasks[:1], system("almanac-analysis", llm, ask_goal=True), tmp_path)
    questions = [e["question"] for e in record.analysis["evidence"]]
    assert questions == [tasks[0].goal, SUB_QUESTIONS[0]] and record.sql_calls == 2


def test_the_model_options_reach_the_systems_prompt_cache_included(tmp_path):
    from bench.analysis_runs.cli import add_analyze_command, model_options

    parser = argparse.ArgumentParser()
    add_analyze_command(parser.add_subparsers(dest="command"))
    args = ["analyze", "insightbench", "--system", "one-sql", "--out", str(tmp_path)]
    given = parser.parse_args([*args, "--prompt-cache", str(tmp_path / "pc"), "--threads", "2"])
    assert model_options(given) == {
        "model": None,
        "threads": 2,
        "llm_cache": None,
        "prompt_cache": tmp_path / "pc",
    }
