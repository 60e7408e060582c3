"""Replaying a pack's default filters on a recorded run: an answer the new filter fixes is
won, one it breaks is lost, one it leaves alone is not counted as changed, and the command
prints the totals."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from bench.replay_filters import main, replay
from bench.run import QuestionResult
from kb.jsonl import write_jsonl
from ukf import RuleUKF

HQ = {"column": "region_code", "op": "<>", "value": "HQ", "breakdown": ["region_code"]}
SHARE = "SELECT SUM(CASE WHEN region_code = 'EUR' THEN amount ELSE 0 END) / SUM(amount) FROM income"
SHARE_NO_HQ = SHARE + " WHERE region_code <> 'HQ'"
BY_REGION = "SELECT region_code, SUM(amount) FROM income GROUP BY region_code"
TOTAL = "SELECT SUM(amount) FROM income"


def _dataset(folder: Path) -> Path:
    folder.mkdir()
    with sqlite3.connect(folder / "fin.sqlite") as connection:
        connection.execute("CREATE TABLE income (region_code TEXT, amount REAL)")
        rows = [("EUR", 30.0), ("NAM", 50.0), ("HQ", 20.0)]
        connection.executemany("INSERT INTO income VALUES (?, ?)", rows)
    connection.close()
    golds = {"share": SHARE_NO_HQ, "regions": BY_REGION, "total": TOTAL}
    lines = [
        {"id": qid, "question": qid, "database": "fin", "split": "test", "gold_sql": [gold]}
        for qid, gold in golds.items()
    ]
    path = folder / "questions.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _row(qid: str, sql: str, right: bool) -> dict:
    return {"id": qid, "position": 0, "question": qid, "database": "fin", "predicted_sql": sql,
            "scores": {"ex": float(right)}}  # fmt: skip


def test_a_filter_wins_the_answers_it_fixes_and_loses_those_it_breaks(tmp_path: Path, capsys):
    questions = _dataset(tmp_path / "data")
    rule = RuleUKF.create("No HQ in regional shares", "No HQ", kind="validity", database="fin",
                          content_resources={"default_filter": HQ})  # fmt: skip
    rows = [
        _row("share", SHARE, False),  # counted HQ in: the filter fixes it
        _row("regions", BY_REGION, True),  # the gold keeps HQ: the filter breaks it
        _row("total", TOTAL, True),  # breaks nothing down: left alone
        _row("unknown", TOTAL, True),  # not in the dataset
    ]
    results = [QuestionResult.model_validate(row) for row in rows]
    summary = replay(results, str(questions), [rule])
    assert summary.answers == 3 and summary.right_before == 2
    verdicts = {r.id: (r.right_before, r.right_after) for r in summary.changed}
    assert verdicts == {"share": (False, True), "regions": (True, False)}
    assert summary.right_after == 2
    assert replay(results, str(questions), []).changed == []

    knowledge = tmp_path / "knowledge.jsonl"
    write_jsonl([rule], knowledge)
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ["--dataset", str(questions), "--knowledge", str(knowledge), "--run", str(run)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "share won:" in out and "regions lost:" in out
    assert "answers: 3  changed: 2  won: 1  lost: 1" in out
    assert main([*args[:4], "--run", str(tmp_path / "nowhere")]) == 2
    assert "no results.jsonl" in capsys.readouterr().err


def test_the_period_the_question_names_is_replayed(tmp_path: Path):
    folder = tmp_path / "data"
    folder.mkdir()
    with sqlite3.connect(folder / "fin.sqlite") as connection:
        connection.execute("CREATE TABLE income (period TEXT, amount REAL)")
        connection.executemany(
            "INSERT INTO income VALUES (?, ?)", [("202406", 6.0), ("202409", 9.0)]
        )
    connection.close()
    gold = "SELECT SUM(amount) FROM income WHERE period = '202409'"
    line = {"id": "qtd", "question": "Revenue this quarter?", "database": "fin", "split": "test",
            "gold_sql": [gold], "context": {"query_time": "2024-10-04T08:15:00Z"}}  # fmt: skip
    questions = folder / "questions.jsonl"
    questions.write_text(json.dumps(line) + "\n")
    calendar = {"fiscal_year_start_month": 4, "publish_day": 10, "period_column": "period"}
    rule = RuleUKF.create("Fiscal calendar", "April to March", kind="temporal", database="fin",
                          content_resources={"calendar": calendar})  # fmt: skip
    written = "SELECT SUM(amount) FROM income WHERE period = '202406'"
    results = [QuestionResult.model_validate(_row("qtd", written, False))]
    summary = replay(results, str(questions), [rule])
    assert [(r.id, r.replayed_sql, r.right_after) for r in summary.changed] == [("qtd", gold, True)]
    # a calendar that names no period column pins nothing
    unnamed = {k: v for k, v in calendar.items() if k != "period_column"}
    plain = RuleUKF.create("Fiscal calendar", "April to March", kind="temporal", database="fin",
                           content_resources={"calendar": unnamed})  # fmt: skip
    assert replay(results, str(questions), [plain]).changed == []
