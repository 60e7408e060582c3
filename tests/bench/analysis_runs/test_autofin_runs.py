"""``bench analyze autofin``: long-form AutoFin questions analysed on a small AutoFin-shaped
SQLite database built here (the real AutoFin build takes minutes), with the real chain, the
real analyst, the AutoFin knowledge pack and a scripted model: the answers read by
``score-longform`` and by the judge's loader, resuming, a failing question recorded."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from bench.analysis_runs.autofin import (
    AutoFinAnalysis,
    LongformRecord,
    read_longform,
)
from bench.analysis_runs.runner import ANSWERS, run_tasks
from bench.analysis_runs.summary import summarize
from bench.analysis_runs.systems import RunBounds
from bench.autofin.longform_score import read_jsonl, score
from bench.datasets.dataset import DatasetFormatError
from bench.judge.answers import read_analysis_answers
from indices.embeddings import HashingEmbedder
from tests.agents.learn.test_gate import knowledge_of
from tests.agents.scripted import ScriptedLLM, sql_reply

GROWTH = "How has Zephyr's revenue in EMEA developed since 2021?"
MARGIN = "Why did Aurora's gross margin fall in FY2024 Q3?"
PEAK = "Describe Helix's monthly revenue over the years: when is it highest?"
SQL = "SELECT period, SUM(revenue) AS revenue FROM sales GROUP BY period ORDER BY period"
PACK_METRIC = "(Revenue - Cost of sales) / Revenue"  # the pack's gross margin formula


def question(number: int, kind: str, text: str, expects: dict, database: str) -> dict:
    return {
        "id": f"autofin-lf-{number:02d}",
        "question": text,
        "type": kind,
        "reference": f"reference answer {number}",
        "database": database,
        "expects": expects,
    }


@pytest.fixture
def questions_file(tmp_path: Path) -> Path:
    """A two-table AutoFin-shaped database and three questions on it (one per scorer
    check used: trend up, driver, peak month)."""
    folder = tmp_path / "autofin"
    folder.mkdir()
    with closing(sqlite3.connect(folder / "autofin.sqlite")) as db:
        db.execute("CREATE TABLE sales (period TEXT, region TEXT, revenue REAL, cost REAL)")
        rows = [(f"2024-{m:02d}", "EMEA", 100.0 + 10 * m, 60.0 + 5 * m) for m in range(1, 13)]
        db.executemany("INSERT INTO sales VALUES (?, ?, ?, ?)", rows)
        db.commit()
    trend = {"kind": "trend_up", "brand": "ZP", "region": "EMEA"}
    driver = {"kind": "driver", "brand": "AU", "region": "APAC", "model": "AU-S"}
    peak = {"kind": "peak_month", "brand": "HX", "month": 12}
    lines = [
        question(1, "descriptive", GROWTH, trend, "autofin.sqlite"),  # relative: beside the file
        question(2, "diagnostic", MARGIN, driver, str(folder / "autofin.sqlite")),
        question(3, "descriptive", PEAK, peak, str(folder / "autofin.sqlite")),
    ]
    path = folder / "longform.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


class Model:
    """The scripted model: a two-step plan, a narrative saying revenue grew and peaks in
    December, the typing, else the SQL over ``sales``; each chain prompt's knowledge kept."""

    def __init__(self) -> None:
        self.knowledge: dict[str, str] = {}
        self.llm = ScriptedLLM([self.reply])

    def reply(self, messages, options) -> str:
        prompt = messages[-1]["content"]
        if "Split the analyst's question" in prompt:
            steps = [{"question": "What is the revenue per month?", "purpose": "trend"}]
            return json.dumps({"steps": steps})
        if "Query results:" in prompt:
            findings = [
                {"text": "Revenue grew every month and peaks in December.", "evidence": ["q1"]}
            ]
            return json.dumps({"short_answer": "Revenue grew.", "findings": findings})
        if options.get("json_schema"):
            return json.dumps({"type": "descriptive", "reason": "scripted"})
        asked, knowledge = knowledge_of(messages)
        self.knowledge[asked] = knowledge
        return sql_reply(SQL)


def system(model: Model, name: str = "almanac-analysis") -> AutoFinAnalysis:
    bounds = RunBounds(max_steps=2, time_budget_s=60, ask_deadline_s=30, ask_goal=True)
    return AutoFinAnalysis(name, bounds, llm=model.llm, embedder=HashingEmbedder())


def test_answers_are_read_by_the_scorer_and_the_judge(questions_file: Path, tmp_path: Path):
    tasks = read_longform(questions_file)
    assert tasks[0].database == tasks[1].database  # the relative path is read beside the file
    model = Model()
    out = tmp_path / "out"
    analysis = system(model)
    analysis.prepare(tasks[0].database)
    store = analysis.system.almanac.workspace.store
    assert store.count(type="metric", tags={"DATABASE": "autofin"}) > 0  # the pack, up front
    records = run_tasks(tasks, analysis, out, record_type=LongformRecord)
    assert [r.id for r in records] == ["autofin-lf-01", "autofin-lf-02", "autofin-lf-03"]
    assert all(r.error is None and r.sql_calls == 2 for r in records)
    # the AutoFin knowledge pack reached the chain: the gross margin metric for its question
    assert PACK_METRIC in model.knowledge[MARGIN]
    lines = read_jsonl(out / ANSWERS)
    assert lines[1]["type"] == "diagnostic" and lines[1]["reference"] == "reference answer 2"
    assert lines[1]["database"] == str(tasks[1].database)
    assert lines[0]["findings"][0]["text"] == "Revenue grew every month and peaks in December."
    verdicts = score(read_jsonl(questions_file), lines)
    assert [v.found for v in verdicts] == [True, False, True]  # the planted driver not named
    judged = read_analysis_answers(out / ANSWERS)
    assert [a.id for a in judged] == [t.id for t in tasks]
    assert judged[1].question == MARGIN and judged[1].reference == "reference answer 2"
    assert judged[1].database == tasks[1].database and judged[1].type == "diagnostic"
    assert judged[0].short_answer == "Revenue grew." and len(judged[0].evidence) == 2
    assert judged[0].evidence[0].sql.startswith("SELECT") and judged[0].plan
    summary = summarize(records)
    assert summary["answered"] == 3 and summary["sql_calls"]["mean"] == 2.0


def test_a_rerun_answers_only_the_missing_questions(questions_file: Path, tmp_path: Path):
    tasks = read_longform(questions_file)
    out = tmp_path / "out"
    first = run_tasks(tasks[:1], system(Model(), "one-sql"), out, record_type=LongformRecord)
    (out / ANSWERS).open("a").write('{"task_id": "autofin-lf-02", "id": "autofin')  # killed
    model = Model()
    again = run_tasks(tasks, system(model, "one-sql"), out, record_type=LongformRecord)
    assert [r.id for r in again] == [t.id for t in tasks] and again[0] == first[0]
    assert set(model.knowledge) == {MARGIN, PEAK}  # the first question was not asked again
    assert len((out / ANSWERS).read_text().splitlines()) == 3


def test_a_failing_question_is_recorded_and_the_run_goes_on(questions_file, tmp_path):
    good = read_longform(questions_file)
    lines = questions_file.read_text().splitlines()
    bad = json.loads(lines[0]) | {"id": "autofin-lf-09", "database": str(tmp_path / "nowhere.db")}
    questions_file.write_text("\n".join([json.dumps(bad), *lines[1:]]) + "\n")
    tasks = read_longform(questions_file)
    records = run_tasks(tasks, system(Model()), tmp_path / "out", record_type=LongformRecord)
    assert records[0].error and "no AutoFin database" in records[0].error
    assert records[0].question == GROWTH and records[0].findings == []
    assert [r.error for r in records[1:]] == [None, None] and len(good) == 3
    judged = read_analysis_answers(tmp_path / "out" / ANSWERS)  # the judge still reads it
    assert judged[0].id == "autofin-lf-09" and judged[0].text == ""
    [missed, *_] = score(read_jsonl(questions_file), read_jsonl(tmp_path / "out" / ANSWERS))
    assert not missed.found
    assert summarize(records)["errors"] == 1


def test_a_question_without_a_database_is_an_error_naming_its_line(tmp_path: Path):
    path = tmp_path / "longform.jsonl"
    path.write_text(json.dumps({"id": "a", "question": "q", "type": "descriptive"}) + "\n")
    with pytest.raises(DatasetFormatError, match=r"longform\.jsonl:1"):
        read_longform(path)


def test_the_analyze_autofin_subcommand_is_wired(questions_file, tmp_path, capsys):
    from bench.__main__ import main as bench_main

    args = ["analyze", "autofin", "--system", "one-sql", "--out", str(tmp_path / "out")]
    assert bench_main(args) == 2
    assert "needs --questions" in capsys.readouterr().err
    code = bench_main([*args, "--questions", str(questions_file), "--tasks", "autofin-lf-77"])
    assert code == 2 and "unknown task ids: ['autofin-lf-77']" in capsys.readouterr().err


def test_the_judge_protocols_score_the_answers(questions_file: Path, tmp_path: Path):
    from bench.judge.__main__ import parser, run
    from tests.bench.judge.judges import by_prompt

    out = tmp_path / "out"
    run_tasks(read_longform(questions_file), system(Model()), out, record_type=LongformRecord)
    answers = str(out / ANSWERS)

    def decide(prompt: str) -> object:
        if "factual claim" in prompt:  # BI-Bench: checked on the database the answer names
            return {"factual": True, "question": "months?", "sql": "SELECT COUNT(*) FROM sales"}
        if "support the claim" in prompt:
            return {"supported": "(12,)" in prompt}
        if "Reference" in prompt:  # long-form DBQA's match against the reference answer
            return {"score": 4 if "reference answer" in prompt else 1}
        return {"verdict": "perfect", "score": 5}

    scores = {}
    for protocol in ("corgi", "bibench", "dbqa"):
        args = parser().parse_args(
            [protocol, "--answers", answers, "--out", str(tmp_path / protocol)]
        )
        scores[protocol] = run(args, by_prompt(decide))
        items = json.loads((tmp_path / protocol / "scores.json").read_text())["items"]
        assert [item["id"] for item in items] == ["autofin-lf-01", "autofin-lf-02", "autofin-lf-03"]
    assert scores["corgi"]["sql_success"] == 1.0
    assert scores["bibench"]["factual_correctness"] == 1.0
    assert scores["dbqa"]["match"] == 4.0
