"""``python -m bench.judge``: answers in, scores.json + judge.jsonl + report.md out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.agent_workspace import ModelChoice
from bench.judge.__main__ import main, make_judge, parser, run
from tests.bench.judge.judges import GARBAGE, by_prompt
from tests.bench.judge.test_insightbench_loader import needs_data


def write_lines(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@needs_data
def test_insightbench_run_writes_scores_log_and_report(tmp_path: Path) -> None:
    answers = write_lines(
        tmp_path / "answers.jsonl",
        [
            {
                "task_id": "flag-1",
                "insights": ["Hardware incidents are the most common", {"text": "x"}],
                "summary": "Hardware dominates.",
            }
        ],
    )
    out = tmp_path / "out"
    args = parser().parse_args(
        ["insightbench", "--answers", str(answers), "--out", str(out), "--limit", "2"]
    )
    judge = by_prompt(lambda prompt: GARBAGE if "Predicted summary" in prompt else {"score": 1})

    summary = run(args, judge)

    saved = json.loads((out / "scores.json").read_text())
    assert saved["protocol"] == "insightbench" and saved["judge"] == "scripted-judge"
    assert [item["task_id"] for item in saved["items"]] == ["flag-1", "flag-2"]
    first, second = saved["items"]
    assert first["judge_insight"] == 1.0 and first["judge_summary"] == 0.0
    assert second["answered"] is False and second["judge_insight"] == 0.0
    assert summary["judge_insight"] == 0.5 and summary["failed_calls"] == 1
    log_lines = (out / "judge.jsonl").read_text().splitlines()
    assert len(log_lines) == len(judge.calls) == first["ground_truth"] * 2 + 1
    assert "| all | 2 | 1 | 0.500 |" in (out / "report.md").read_text()
    assert (out / "databases" / "flag-2.sqlite").is_file()


def test_dbqa_run_on_analysis_answers(tmp_path: Path) -> None:
    answers = write_lines(
        tmp_path / "answers.jsonl",
        [
            {"question": "Why?", "type": "diagnostic", "short_answer": "Because.", "plan": ["a"]},
            {"id": "p1", "question": "Next?", "type": "predictive", "reference": "Up 5%."},
        ],
    )
    out = tmp_path / "out"
    args = parser().parse_args(["dbqa", "--answers", str(answers), "--out", str(out)])
    perfect = {"verdict": "perfect"}
    judge = by_prompt(lambda prompt: {"score": 5} if "Reference" in prompt else perfect)

    summary = run(args, judge)

    assert summary["all_perfect"] == 1.0 and summary["match"] == 5.0
    items = json.loads((out / "scores.json").read_text())["items"]
    assert [item["id"] for item in items] == ["line-1", "p1"]
    report = (out / "report.md").read_text()
    assert "| diagnostic | 1 | 1.000 |" in report and "| predictive |" in report


def test_bibench_run_uses_the_given_database(tmp_path: Path) -> None:
    import sqlite3

    database = tmp_path / "d.sqlite"
    connection = sqlite3.connect(database)
    connection.execute("CREATE TABLE t (x INTEGER)")
    connection.execute("INSERT INTO t VALUES (7)")
    connection.commit()
    connection.close()
    answers = write_lines(tmp_path / "a.jsonl", [{"question": "x?", "short_answer": "x is 7."}])

    def decide(prompt: str) -> object:
        if "factual claim" in prompt:
            return {"factual": True, "question": "x?", "sql": "SELECT x FROM t"}
        if "support the claim" in prompt:
            return {"supported": "(7,)" in prompt}
        return {"score": 3}

    out = str(tmp_path / "o")
    args = parser().parse_args(
        ["bibench", "--answers", str(answers), "--out", out, "--database", str(database)]
    )
    summary = run(args, by_prompt(decide))

    assert summary["factual_correctness"] == 1.0 and summary["presentation"] == 3.0


def test_judge_options() -> None:
    with pytest.raises(SystemExit, match="--judge-model"):
        make_judge(parser().parse_args(["corgi", "--answers", "a", "--out", "o", "--judge-url=u"]))
    judge = make_judge(
        parser().parse_args(
            ["corgi", "--answers", "a", "--out", "o", "--judge-url", "http://localhost:9/v1",
             "--judge-model", "big"]
        )
    )  # fmt: skip
    assert judge.name == "openai:big@http://localhost:9/v1"


def test_embedded_judge_options_reach_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded: list[tuple[str, ModelChoice]] = []
    monkeypatch.setattr(
        "bench.agent_workspace.load_llm", lambda name, choice: loaded.append((name, choice))
    )
    states = tmp_path / "states"

    make_judge(
        parser().parse_args(
            ["bibench", "--answers", "a", "--out", "o", "--model", "m.gguf", "--threads", "2",
             "--prompt-cache", str(states), "--llm-cache", str(tmp_path / "c.sqlite")]
        )
    )  # fmt: skip

    [(name, choice)] = loaded
    assert name == "m.gguf"
    assert choice.threads == 2 and choice.prompt_cache == states
    assert choice.llm_cache == tmp_path / "c.sqlite"


def test_bad_answers_file_is_named_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"question": "ok?"}\nnot json\n')

    code = main(
        ["dbqa", "--answers", str(answers), "--out", str(tmp_path / "o"), "--judge-url=u",
         "--judge-model=m"]
    )  # fmt: skip

    assert code == 2
    assert "answers.jsonl:2: invalid JSON" in capsys.readouterr().err
