"""The learning curves of streaming runs, alone and compared: cumulative and rolling EX, EX of
the first 50 and of the last 100 questions, mining rounds, one chart for several runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.__main__ import main
from bench.compare import compare_curves, write_comparison
from bench.report import (
    learning_curve,
    mining_lines,
    render_markdown,
    rolling_curve,
    stream_figures,
)
from bench.run import MINING_LOG, QuestionResult


def results(outcomes: list[float | None]) -> list[QuestionResult]:
    return [
        QuestionResult(
            id=f"q{i}",
            position=i,
            question=f"question {i}",
            database="db",
            scores=None
            if ex is None
            else dict.fromkeys(("ex", "spider_ex", "soft_f1", "bf_beta"), ex),
        )
        for i, ex in enumerate(outcomes)
    ]


def write_run(folder: Path, outcomes: list[float | None], rounds: list[dict] = ()) -> Path:
    folder.mkdir()
    lines = [r.model_dump_json() for r in results(outcomes)]
    (folder / "results.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "run.json").write_text(json.dumps({"stream": "labeled"}))
    if rounds:
        text = "\n".join(json.dumps(r) for r in rounds) + "\n"
        (folder / MINING_LOG).write_text(text, encoding="utf-8")
    return folder


def mining_round(number: int, after: int, activated: int) -> dict:
    return {
        "round": number,
        "phase": "stream",
        "after_question": after,
        "experiences": 50,
        "inserted": activated,
        "activated": activated,
        "rejected": 0,
        "waiting": 0,
        "gated": False,
        "mine_seconds": 1.5,
        "gate_seconds": 0.0,
        "seconds": 1.5,
    }


# 200 questions: 30 % right over the first 50, then 70 % from question 101 on
RISING = [1.0 if i % 10 < 3 else 0.0 for i in range(100)]
RISING += [1.0 if i % 10 < 7 else 0.0 for i in range(100)]
FLAT = [1.0 if i % 10 < 3 else 0.0 for i in range(200)]


def test_first_and_last_figures_and_the_rolling_curve():
    figures = stream_figures(results(RISING))
    assert (figures.first_n, figures.last_n, figures.scored) == (50, 100, 200)
    assert figures.first_ex == pytest.approx(0.3) and figures.last_ex == pytest.approx(0.7)
    assert figures.gain == pytest.approx(0.4) and not figures.overlapping
    assert figures.final_ex == pytest.approx(0.5)
    rolling = rolling_curve(results(RISING), window=100)
    assert rolling[-1] == pytest.approx(0.7) and rolling[99] == pytest.approx(0.3)
    assert learning_curve(results(RISING))[-1] == pytest.approx(0.5)
    # unscored questions are left out; a short stream's windows overlap
    short = stream_figures(results([1.0, None, 0.0, 1.0]))
    assert short.scored == 3 and short.overlapping
    assert short.first_ex == pytest.approx(2 / 3) and short.last_ex == short.first_ex


def test_the_report_of_a_mining_stream_has_its_figures_and_rounds():
    rounds = [mining_round(1, 50, 12), mining_round(2, 100, 3)]
    text = render_markdown(results(RISING), title="t", streaming=True, mining=rounds)
    assert "EX of the first 50 questions 0.300, of the last 100 0.700: +40.0 EX points" in text
    assert "## Mining rounds" in text and "| 2 | stream | 100 | 50 | 0 | 3 | 3 | 0 | 0 |" in text
    assert "activated directly (no gate): 15" in text
    assert mining_lines([]) == []


def test_two_streams_compared_on_one_chart_and_table(tmp_path, capsys):
    mined = write_run(tmp_path / "mined", RISING, [mining_round(1, 50, 12)])
    plain = write_run(tmp_path / "plain", [*FLAT[:199], None])  # the last question unscored
    count, curves = compare_curves([plain, mined])
    assert count == 199
    by_name = {c.name: c for c in curves}
    assert by_name["mined"].figures.gain > 0.35 and by_name["plain"].figures.gain == 0.0
    assert by_name["mined"].mining_rounds == 1 and by_name["mined"].activated == 12
    assert by_name["plain"].mining_rounds == 0
    assert len(by_name["mined"].cumulative) == len(by_name["mined"].rolling) == 199

    path = write_comparison([plain, mined], tmp_path / "cmp")
    text = path.read_text()
    assert "Learning curves over 199 questions scored in every run" in text
    assert "| plain | 0.300 | 0.300 | +0.0 |" in text and "| mined | 0.300 |" in text
    assert (tmp_path / "cmp" / "learning_curves.png").read_bytes()[:4] == b"\x89PNG"

    assert main(["compare", str(plain), str(mined), "--out", str(tmp_path / "cli")]) == 0
    printed = capsys.readouterr().out
    assert "199 questions scored in every run" in printed and "| mined | 0.300 |" in printed
    assert (tmp_path / "cli" / "comparison.md").exists()
