"""The benchmark runner: scoring, resuming, timeouts, failures and the streaming mode."""

from __future__ import annotations

import json
import re
import sqlite3
import time
from itertools import pairwise
from pathlib import Path

import pytest

from bench.__main__ import main as bench_main
from bench.datasets import Dataset, Example, write_jsonl
from bench.report import alternative_lines, learning_curve, render_markdown, timeout_line
from bench.run import RunConfig, Runner, load_results
from bench.systems import GoldSystem, Prediction


@pytest.fixture()
def shop(tmp_path: Path) -> Dataset:
    db = tmp_path / "shop.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, region TEXT, amount REAL)")
        conn.executemany(
            "INSERT INTO orders VALUES (?, ?, ?)",
            [(i, "EU" if i % 2 else "US", i * 10.0) for i in range(1, 21)],
        )
    url = f"sqlite:///{db}"
    questions = [
        ("How many orders?", "SELECT COUNT(*) FROM orders", "easy"),
        ("Total by region?", "SELECT region, SUM(amount) FROM orders GROUP BY region", "medium"),
        ("Largest orders?", "SELECT id FROM orders ORDER BY amount DESC LIMIT 3", "medium"),
        ("EU orders?", "SELECT id FROM orders WHERE region = 'EU'", "easy"),
        ("Broken gold?", "SELECT nope FROM orders", "hard"),
    ]
    examples = [
        Example(
            id=f"q{i}",
            question=q,
            database="shop",
            database_url=url,
            gold_sql=[sql],
            difficulty=d,
            tags=["[DATASET:shop]", f"[LEVEL:{d}]"],
        )
        for i, (q, sql, d) in enumerate(questions)
    ]
    return Dataset(name="shop", examples=examples, databases={"shop": url})


class Scripted:
    """Answers from a table of SQL by question id; counts calls."""

    name = "scripted"

    def __init__(self, answers: dict[str, str | Exception], delay: float = 0.0) -> None:
        self.answers, self.delay, self.calls = answers, delay, 0

    def predict(self, example: Example, dialect: str) -> Prediction:
        self.calls += 1
        time.sleep(self.delay)
        answer = self.answers.get(example.id, "SELECT 0")
        if isinstance(answer, Exception):
            raise answer
        return Prediction(sql=answer)


def test_gold_scores_one_and_broken_gold_is_left_out(shop, tmp_path):
    results = Runner(shop, GoldSystem(), RunConfig(out_dir=tmp_path / "out", workers=2)).run()
    scored = [r for r in results if r.scored]
    assert len(scored) == 4
    assert all(
        r.scores == {"ex": 1.0, "spider_ex": 1.0, "soft_f1": 1.0, "bf_beta": 1.0} for r in scored
    )
    broken = results[-1]
    assert broken.scores is None and "nope" in broken.gold_error
    assert [r.id for r in results] == [f"q{i}" for i in range(5)]


def test_wrong_failing_and_slow_predictions_are_recorded_not_fatal(shop, tmp_path):
    system = Scripted(
        {
            "q0": "SELECT COUNT(*) FROM orders",
            "q1": "SELECT region FROM orders",  # wrong
            "q2": "DELETE FROM orders",  # refused by the read-only database
            "q3": RuntimeError("model crashed"),
        }
    )
    results = Runner(shop, system, RunConfig(out_dir=tmp_path / "out")).run()
    by_id = {r.id: r for r in results}
    assert by_id["q0"].scores["ex"] == 1.0
    assert by_id["q1"].scores["ex"] == 0.0 and 0 < by_id["q1"].scores["bf_beta"] < 1
    assert by_id["q2"].execution_error and by_id["q2"].scores["ex"] == 0.0
    assert "model crashed" in by_id["q3"].prediction_error
    slow = Runner(
        shop.filter(limit=2),
        Scripted({}, delay=0.4),
        RunConfig(out_dir=tmp_path / "slow", timeout_s=0.1),
    ).run()
    assert all("timed out" in r.prediction_error for r in slow)


class SlowOn:
    """The gold answer, ``delay`` seconds late on the questions in ``slow``; notes when each
    predict started and ended."""

    name = "slow-on"

    def __init__(self, slow: set[str], delay: float) -> None:
        self.slow, self.delay = slow, delay
        self.spans: list[tuple[float, float]] = []

    def predict(self, example: Example, dialect: str) -> Prediction:
        start = time.perf_counter()
        if example.id in self.slow:
            time.sleep(self.delay)
        self.spans.append((start, time.perf_counter()))
        return Prediction(sql=example.gold_sql[0])


def test_a_predict_past_its_timeout_fails_its_question_and_is_counted(shop, tmp_path):
    system = SlowOn({"q1", "q3"}, delay=0.5)
    out = tmp_path / "out"
    results = Runner(shop, system, RunConfig(out_dir=out, timeout_s=0.2)).run()
    by_id = {r.id: r for r in results}
    for qid in ("q1", "q3"):
        late = by_id[qid]
        assert late.prediction_error == "timed out after 0.2 s" and late.predicted_sql is None
        assert late.scores["ex"] == 0.0  # the right answer came too late
        assert late.timed_out_after_s == 0.2 and late.latency_s >= 0.5
        assert late.overrun_s == pytest.approx(late.latency_s - 0.2) and late.overrun_s >= 0.3
    for qid in ("q0", "q2"):
        assert by_id[qid].timed_out_after_s is None and by_id[qid].overrun_s == 0.0
        assert by_id[qid].scores["ex"] == 1.0
    assert load_results(out / "results.jsonl")[1].timed_out_after_s == 0.2
    # the late predict was not stopped, and the run waited for it: no predict overlaps the next
    spans = sorted(system.spans)
    assert len(spans) == 5 and all(end <= after for (_, end), (after, _) in pairwise(spans))
    longest = max(by_id["q1"].overrun_s, by_id["q3"].overrun_s)
    line = timeout_line(results)
    assert line == (
        "Timeouts: 2 questions past 0.2 s, answers discarded; a started predict cannot be "
        f"stopped, it ran on for up to {longest:.1f} s and the run waited for it"
    )
    assert line in render_markdown(results, title="slow", streaming=False)
    assert timeout_line([by_id["q0"], by_id["q2"]]) is None
    assert "Timeouts" not in render_markdown([by_id["q0"]], title="fast", streaming=False)


def test_command_line_summary_and_report_count_the_timeouts(shop, tmp_path, capsys, monkeypatch):
    path = tmp_path / "shop.jsonl"
    write_jsonl(shop.examples[:2], path)
    monkeypatch.setattr(
        "bench.__main__.make_system", lambda name, **options: SlowOn({"q1"}, delay=0.4)
    )
    out = tmp_path / "run"
    args = ["run", "--dataset", str(path), "--system", "slow", "--out", str(out)]
    assert bench_main([*args, "--timeout", "0.1"]) == 0
    printed = capsys.readouterr().out
    assert "2/2 scored" in printed  # the late question is scored, as a failure
    assert "Timeouts: 1 question past 0.1 s, answers discarded" in printed
    report = (out / "report.md").read_text()
    assert "Timeouts: 1 question past 0.1 s, answers discarded" in report
    assert re.search(r"it ran on for up to 0\.[3-9] s and the run waited for it", report)


def test_a_run_resumes_where_it_stopped(shop, tmp_path):
    out = tmp_path / "out"
    first = Scripted({})
    Runner(shop.filter(limit=2), first, RunConfig(out_dir=out)).run()
    second = Scripted({})
    results = Runner(shop, second, RunConfig(out_dir=out)).run()
    assert first.calls == 2 and second.calls == 3 and len(results) == 5
    with (out / "results.jsonl").open("a") as handle:
        handle.write('{"id": "torn')  # a crash mid-line
    assert len(load_results(out / "results.jsonl")) == 5


class Memorizer:
    """Learns gold SQL when it is revealed; answers remembered questions."""

    name = "memorizer"

    def __init__(self) -> None:
        self.memory: dict[str, str] = {}

    def predict(self, example: Example, dialect: str) -> Prediction:
        return Prediction(sql=self.memory.get(example.question, "SELECT 0"))

    def observe(self, example: Example, prediction: Prediction, gold_revealed: bool) -> None:
        if gold_revealed:
            self.memory[example.question] = example.gold_sql[0]


def test_streaming_mode_reveals_gold_only_when_labeled(shop, tmp_path):
    repeated = Dataset(
        name="shop",
        databases=shop.databases,
        examples=[
            ex.model_copy(update={"id": f"{ex.id}-{round_}"})
            for round_ in range(3)
            for ex in shop.examples[:4]
        ],
    )
    labeled = Runner(
        repeated, Memorizer(), RunConfig(out_dir=tmp_path / "labeled", stream="labeled")
    ).run()
    unlabeled = Runner(
        repeated, Memorizer(), RunConfig(out_dir=tmp_path / "unlabeled", stream="unlabeled")
    ).run()
    assert learning_curve(labeled)[-1] == pytest.approx(8 / 12)
    assert learning_curve(unlabeled)[-1] == 0.0


def test_command_line_writes_results_report_and_plots(shop, tmp_path, capsys):
    path = tmp_path / "shop.jsonl"
    write_jsonl(shop.examples, path)
    out = tmp_path / "run"
    args = ["run", "--dataset", str(path), "--system", "gold", "--out", str(out)]
    assert bench_main(args) == 0
    assert "4/5 scored" in capsys.readouterr().out
    report = (out / "report.md").read_text()
    assert "| all | 4 | 1.000 | 1.000 | 1.000 | 1.000 |" in report
    assert "[LEVEL:medium]" in report and "Broken gold?" not in report
    for plot in ("scores_by_difficulty.png", "latency.png"):
        assert (out / plot).read_bytes()[:4] == b"\x89PNG"
    assert bench_main([*args, "--stream", "labeled"]) == 2  # another run in the same folder
    assert "another run" in capsys.readouterr().err
    # how the answers were drawn is part of what a run is: resuming with other draws is refused
    sampled = [*args, "--out", str(tmp_path / "sampled"), "--sequences", "5"]
    assert bench_main([*sampled, "--adaptive-target", "0.1"]) == 0
    assert json.loads((tmp_path / "sampled" / "run.json").read_text())["adaptive_target"] == 0.1
    assert bench_main([*sampled, "--adaptive-target", "0.1"]) == 0  # the same run resumes
    assert bench_main([*sampled, "--adaptive-target", "1.0"]) == 2
    assert bench_main([*sampled, "--adaptive-target", "0.1", "--escalation-target", "0.6"]) == 2
    assert bench_main([*sampled[:-2], "--adaptive-target", "0.1"]) == 2  # no --sequences
    assert "another run" in capsys.readouterr().err
    assert bench_main([*args, "--system", "nope", "--fresh"]) == 2


class WithGreedy:
    """Answers right but names a wrong greedy alternative on q0 and a failing one on q1."""

    name = "with-greedy"

    def predict(self, example: Example, dialect: str) -> Prediction:
        gold = example.gold_sql[0]
        alternatives = {
            "q0": {"greedy": "SELECT 0"},
            "q1": {"greedy": "SELECT missing FROM orders"},
            "q3": {"greedy": gold},
        }
        return Prediction(sql=gold, alternatives=alternatives.get(example.id, {}))


def test_alternatives_are_scored_beside_the_answer_and_reported(shop, tmp_path):
    out = tmp_path / "out"
    results = Runner(shop, WithGreedy(), RunConfig(out_dir=out)).run()
    by_id = {r.id: r for r in results}
    assert by_id["q0"].alternative_scores["greedy"]["ex"] == 0.0
    assert by_id["q1"].alternative_scores["greedy"] == dict.fromkeys(
        ("ex", "spider_ex", "soft_f1", "bf_beta"), 0.0
    )
    assert by_id["q3"].alternative_scores["greedy"]["ex"] == 1.0
    assert by_id["q2"].alternative_scores == {}
    assert by_id["q4"].alternative_scores == {}  # the gold fails: nothing is scored
    assert load_results(out / "results.jsonl")[0].alternative_scores == {
        "greedy": by_id["q0"].alternative_scores["greedy"]
    }
    lines = alternative_lines(results)
    # three questions carry a greedy answer: the answer is right on all, the greedy on one
    assert lines[2] == "| greedy | 3 | 1.000 | 0.333 | +0.667 | 2 | 0 |"
    assert alternative_lines([r for r in results if r.id == "q2"]) == []
