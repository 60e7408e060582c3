"""The cross-model check over two recorded runs: answers agree by their results on the
database (not by their text), a failed or missing query agrees with nothing, unscored answers
are left out, and the figures follow from the verdicts."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from bench.cross_check import CheckedAnswer, checked_answers, figures, main
from bench.run import run_results

COUNT = "SELECT COUNT(*) FROM orders"
COUNT_AGAIN = "select count(id) from orders"  # other text, same result
IDS = "SELECT id FROM orders"
IDS_REVERSED = "SELECT orders.id FROM orders ORDER BY id DESC"  # a bag match ignores order
BROKEN = "SELECT nothing FROM nowhere"


def _dataset(folder: Path) -> Path:
    folder.mkdir()
    with sqlite3.connect(folder / "shop.sqlite") as connection:
        connection.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
        connection.executemany("INSERT INTO orders VALUES (?)", [(1,), (2,), (3,)])
    connection.close()
    line = {"id": "q", "question": "How many orders?", "database": "shop", "split": "test",
            "gold_sql": [COUNT]}  # fmt: skip
    (folder / "questions.jsonl").write_text(json.dumps(line) + "\n")
    return folder / "questions.jsonl"


def _row(qid: str, sql: str | None, ex: float | None, confidence: float | None = 0.5) -> dict:
    meta = {} if confidence is None else {"confidence": confidence}
    return {"id": qid, "position": 0, "question": qid, "database": "shop", "latency_s": 2.0,
            "predicted_sql": sql, "scores": None if ex is None else {"ex": ex},
            "system_metadata": meta}  # fmt: skip


def _write(run: Path, rows: list[dict]) -> Path:
    run.mkdir()
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run


def test_answers_agree_by_their_results_and_unusable_ones_are_left_out(tmp_path: Path):
    questions = _dataset(tmp_path / "data")
    run = [
        _row("same-result", COUNT, 1.0),
        _row("row-order", IDS, 0.0),
        _row("differs", COUNT, 1.0),
        _row("check-broke", IDS, 0.0),
        _row("mine-broke", BROKEN, 0.0),
        _row("unscored", COUNT, None),
        _row("no-confidence", COUNT, 1.0, confidence=None),
        _row("not-checked", COUNT, 1.0),
    ]
    check = [
        _row("same-result", COUNT_AGAIN, 1.0),
        _row("row-order", IDS_REVERSED, 0.0),
        _row("differs", IDS, 0.0),
        _row("check-broke", BROKEN, 0.0),
        _row("mine-broke", BROKEN, 0.0),
        _row("unscored", COUNT, 1.0),
        _row("no-confidence", COUNT, 1.0),
    ]
    urls = {"shop": f"sqlite:///{questions.parent / 'shop.sqlite'}"}
    answers = checked_answers(
        run_results(_write(tmp_path / "run", run)),
        run_results(_write(tmp_path / "check", check)),
        urls,
    )
    assert {a.id: a.agrees for a in answers} == {
        "same-result": True,
        "row-order": True,
        "differs": False,
        "check-broke": False,
        "mine-broke": False,  # two failures are not an agreement
    }
    assert [a.right for a in answers] == [True, False, True, False, False]


def _answers(pattern: list[tuple[bool, bool, float]]) -> list[CheckedAnswer]:
    return [
        CheckedAnswer(f"q{i}", right, confidence, agrees, 4.0, 1.0)
        for i, (right, agrees, confidence) in enumerate(pattern)
    ]


def test_figures_follow_the_verdicts_and_agreement_adds_what_confidence_lacks():
    # confidence says nothing (0.5 everywhere); agreement separates right from wrong but twice
    pattern = [(True, True, 0.5)] * 18 + [(False, False, 0.5)] * 18
    pattern += [(True, False, 0.5), (False, True, 0.5)] * 2
    result = figures(_answers(pattern))
    assert result["answers"] == 40.0 and result["right"] == 0.5 and result["agree"] == 0.5
    assert result["right_when_agreeing"] == pytest.approx(18 / 20)
    assert result["right_when_not"] == pytest.approx(2 / 20)
    assert result["auroc_agreement"] == pytest.approx(0.9)
    assert result["auroc_recorded_confidence"] == 0.5
    assert result["mean_latency_s"] == 4.0 and result["mean_check_latency_s"] == 1.0
    assert result["cv_auroc_confidence"] < 0.6  # held-out: a constant tells nothing
    assert result["cv_auroc_confidence_and_agreement"] > 0.75


def test_too_few_of_a_class_leaves_the_cross_fitted_figures_undefined():
    result = figures(_answers([(True, True, 0.9)] * 10 + [(False, False, 0.1)] * 3))
    assert result["auroc_agreement"] == 1.0
    assert result["cv_auroc_confidence"] is None and result["cv_ece_confidence"] is None
    with pytest.raises(ValueError, match="no question"):
        figures([])


def test_the_command_wants_one_check_per_run_and_names_a_missing_run(tmp_path: Path, capsys):
    questions = str(_dataset(tmp_path / "data"))
    assert main(["--dataset", questions, "--run", "a", "--run", "b", "--check", "c"]) == 2
    assert "2 --run but 1 --check" in capsys.readouterr().err
    assert main(["--dataset", questions, "--run", str(tmp_path), "--check", "c"]) == 2
    assert f"no results.jsonl in {tmp_path}" in capsys.readouterr().err
