"""The self-check over a recorded run (orchestration only; a scripted checker stands in for
the model, whose own verdicts are tested in tests/agents/test_self_check.py): each scored
answer of a known database gains the signal in a copy, the run itself is left as it was."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from agents.confidence.self_check import Verdict
from bench.self_check import SIGNAL, check_run

RIGHT = "SELECT COUNT(*) FROM orders"
WRONG = "SELECT id FROM orders"
UNSURE = "SELECT MAX(id) FROM orders"


class ScriptedChecker:
    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    def verdict(self, question: str, schema: str, sql: str) -> Verdict:
        self.asked.append((question, schema))
        p_yes = {RIGHT: 0.9, WRONG: 0.2}.get(sql)  # UNSURE: the reply was not yes or no
        return Verdict("yes" if p_yes else "maybe", p_yes)


def _dataset(folder: Path) -> Path:
    folder.mkdir()
    with sqlite3.connect(folder / "shop.sqlite") as connection:
        connection.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
    connection.close()
    line = {"id": "q", "question": "How many orders?", "database": "shop", "split": "test",
            "gold_sql": [RIGHT]}  # fmt: skip
    (folder / "questions.jsonl").write_text(json.dumps(line) + "\n")
    return folder / "questions.jsonl"


def _row(qid: str, sql: str | None, ex: float | None, database: str = "shop") -> dict:
    scores = None if ex is None else {"ex": ex}
    meta = {"confidence": 0.6, "signals": {"repairs": 0.0}}
    return {"id": qid, "question": f"question {qid}", "database": database,
            "predicted_sql": sql, "scores": scores, "system_metadata": meta}  # fmt: skip


def test_scored_answers_gain_the_verdict_in_a_copy_and_the_run_is_untouched(tmp_path: Path):
    questions = _dataset(tmp_path / "data")
    run = tmp_path / "run"
    run.mkdir()
    rows = [
        _row("right", RIGHT, 1.0),
        _row("wrong", WRONG, 0.0),
        _row("unsure", UNSURE, 0.0),
        _row("unscored", RIGHT, None),  # its gold failed: nothing to learn from
        _row("elsewhere", RIGHT, 1.0, database="not_in_the_dataset"),
    ]
    recorded = "".join(json.dumps(r) + "\n" for r in rows)
    (run / "results.jsonl").write_text(recorded)
    (run / "run.json").write_text('{"system": "almanac"}')
    checker = ScriptedChecker()

    figures = check_run(run, str(questions), checker, tmp_path / "copy")  # type: ignore[arg-type]

    assert figures["answers_read"] == 2.0 and figures["right"] == 1.0
    assert figures["auroc_self_check"] == 1.0
    assert figures["auroc_recorded_confidence"] == 0.5  # the same 0.6 for both
    assert len(checker.asked) == 3 and all("CREATE TABLE orders" in s for _, s in checker.asked)
    copied = {
        r["id"]: r["system_metadata"]["signals"]
        for r in map(json.loads, (tmp_path / "copy" / "results.jsonl").read_text().splitlines())
    }
    assert copied["right"] == {"repairs": 0.0, SIGNAL: 0.9}
    assert copied["wrong"][SIGNAL] == 0.2
    assert all(SIGNAL not in copied[q] for q in ("unsure", "unscored", "elsewhere"))
    assert (tmp_path / "copy" / "run.json").read_text() == '{"system": "almanac"}'
    assert (run / "results.jsonl").read_text() == recorded
