"""Comparing runs on the questions every one of them scored."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.__main__ import main
from bench.compare import compare_runs
from bench.run import QuestionResult


def _write(folder: Path, outcomes: dict[str, float | None], latency: float) -> Path:
    folder.mkdir()
    lines = []
    for position, (qid, ex) in enumerate(outcomes.items()):
        scores = (
            None if ex is None else dict.fromkeys(("ex", "spider_ex", "soft_f1", "bf_beta"), ex)
        )
        result = QuestionResult(
            id=qid,
            position=position,
            question=qid,
            database="db",
            scores=scores,
            latency_s=latency * (position + 1),
        )
        lines.append(result.model_dump_json())
    (folder / "results.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_runs_are_compared_on_their_common_scored_questions(tmp_path, capsys):
    base = _write(tmp_path / "base", {"q1": 1.0, "q2": 0.0, "q3": 1.0, "q4": 1.0}, 1.0)
    # q4 not reached yet, q3 unscored: both left out
    other = _write(tmp_path / "other", {"q1": 0.0, "q2": 1.0, "q3": None}, 2.0)
    ids, table = compare_runs([base, other])
    assert ids == ["q1", "q2"]
    assert table[0].scores["ex"] == 0.5 and table[1].scores["ex"] == 0.5
    assert (table[1].won, table[1].lost) == (1, 1) and (table[0].won, table[0].lost) == (0, 0)
    assert table[1].latency_p50 == 3.0
    assert main(["compare", str(base), str(other)]) == 0
    printed = capsys.readouterr().out
    assert "2 questions scored in every run" in printed and "| other | 0.500" in printed


def test_a_folder_without_results_is_a_clear_error(tmp_path, capsys):
    base = _write(tmp_path / "base", {"q1": 1.0}, 1.0)
    assert main(["compare", str(base), str(tmp_path / "missing")]) == 2
    assert "no results in" in capsys.readouterr().err
    with pytest.raises(FileNotFoundError):
        compare_runs([tmp_path / "missing"])
