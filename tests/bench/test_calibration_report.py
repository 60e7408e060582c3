"""``python -m bench.calibration report`` on runs written by hand: AUROC and ECE per set,
abstention by threshold, adaptive against fixed, and the calibrator it writes."""

from __future__ import annotations

import json
import random
from pathlib import Path

from agents.confidence.calibrator import Calibrator
from bench.calibration import main, read_run, read_unanswerable
from bench.run import QuestionResult


def _run(
    folder: Path, n: int, seed: int, *, seconds: float = 1.0, samples: float = 1.0, ids: str = "q"
) -> None:
    """``n`` answers whose ``sql_logprob_min`` separates right (high) from wrong (low), to
    questions ``{ids}0``, ``{ids}1``, ... (sets with the same ``ids`` answer the same ones)."""
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    lines = []
    for i in range(n):
        right = i % 3 != 0
        signals = {
            "sql_logprob_min": rng.uniform(-0.4, 0.0) if right else rng.uniform(-3.0, -0.5),
            "samples": samples,
        }
        result = QuestionResult(
            id=f"{ids}{i}",
            position=i,
            question=f"question {i}",
            database="db",
            scores={"ex": 1.0 if right else 0.0},
            latency_s=seconds,
            system_metadata={"signals": signals, "confidence": 0.5},
        )
        lines.append(result.model_dump_json())
    (folder / "results.jsonl").write_text("\n".join(lines) + "\n")


def _unanswerable(folder: Path, n: int) -> None:
    folder.mkdir(parents=True)
    rows = [
        {"id": f"u{i}", "metadata": {"signals": {"sql_logprob_min": -2.0 - i / n}}, "seconds": 1}
        for i in range(n)
    ]
    (folder / "unanswerable.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")


def test_the_report_measures_each_set_and_writes_a_calibrator(tmp_path, capsys):
    _run(tmp_path / "a", 90, 1, ids="a")
    _run(tmp_path / "b", 60, 2, ids="b")
    _unanswerable(tmp_path / "u", 20)
    assert len(read_run("a", tmp_path / "a")) == 90
    assert {s.correct for s in read_unanswerable(tmp_path / "u")} == {False}
    written = tmp_path / "calibrator.json"
    argv = ["report", f"a={tmp_path / 'a'}", f"b={tmp_path / 'b'}"]
    argv += ["--unanswerable", str(tmp_path / "u"), "--write", str(written)]
    argv += ["--out", str(tmp_path / "report.md")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    rows = {line.split("|")[1].strip(): line for line in out.splitlines() if line.startswith("| ")}
    # the signal separates the answers perfectly: AUROC 1.0 out of sample
    assert rows["a"].split("|")[6].strip() == "1.000" and rows["all sets"]
    assert rows["0.5"].split("|")[2].strip().startswith("1.000 (20/20)")  # all unanswerable
    assert rows["0.5"].split("|")[3].strip().startswith("0.000 (0/60)")  # no right answer
    calibrator = Calibrator.load(written)
    assert calibrator.method == "logistic" and calibrator.fitted_on.examples == 170
    assert calibrator.source == "bench:a+b+unanswerable"
    assert (tmp_path / "report.md").read_text().startswith("| set |")


def test_adaptive_against_fixed(tmp_path, capsys):
    _run(tmp_path / "adaptive", 30, 3, seconds=2.0, samples=2.0)
    _run(tmp_path / "fixed", 30, 3, seconds=8.0, samples=5.0)
    argv = ["report", f"a={tmp_path / 'adaptive'}"]
    argv += ["--adaptive", str(tmp_path / "adaptive"), "--fixed", str(tmp_path / "fixed")]
    assert main(argv) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("adaptive vs"))
    assert "on 30 questions: EX 0.667 vs 0.667 (+0.0 points)" in line
    assert "mean latency 2.00 s vs 8.00 s (25 %)" in line and "2.00 samples" in line


def test_bad_arguments_are_refused(tmp_path, capsys):
    assert main(["report", "no-equals-sign"]) == 2
    assert "NAME=FOLDER" in capsys.readouterr().err


def test_write_follows_the_version_of_the_calibrator_already_there(tmp_path, capsys):
    _run(tmp_path / "a", 90, 1)
    _run(tmp_path / "b", 60, 2)
    written = tmp_path / "calibrator.json"
    argv = ["report", f"a={tmp_path / 'a'}", f"b={tmp_path / 'b'}", "--write", str(written)]
    assert main(argv) == 0
    assert Calibrator.load(written).version == 1
    assert main(argv) == 0
    assert Calibrator.load(written).version == 2
    assert "calibrator logistic v2 on 150" in capsys.readouterr().out
    written.write_text("not json")  # unreadable: the refit starts again at 1
    assert main(argv) == 0
    assert Calibrator.load(written).version == 1


def test_recorded_abstention_reads_the_confidence_the_answers_carried(tmp_path, capsys):
    _run(tmp_path / "a", 30, 4)  # every answer recorded 0.5
    folder = tmp_path / "u"
    folder.mkdir()
    rows = [  # half the unanswerable questions were answered at 0.2, half at 0.55
        {"id": f"u{i}", "metadata": {"signals": {}, "confidence": 0.2 if i % 2 else 0.55}}
        for i in range(10)
    ]
    (folder / "unanswerable.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    argv = ["report", f"a={tmp_path / 'a'}", "--unanswerable", str(folder)]
    assert main([*argv, "--abstain-fit", "recorded"]) == 0
    out = capsys.readouterr().out
    assert "abstention (recorded calibrator)" in out
    table = {x.split("|")[1].strip(): x.split("|") for x in out.splitlines() if x.startswith("| ")}
    assert table["0.3"][2].strip() == "0.500 (5/10)" and table["0.3"][3].strip() == "0.000 (0/20)"
    assert table["0.5"][3].strip() == "0.000 (0/20)"  # 0.5 is not under 0.5
    assert table["0.6"][2].strip() == "1.000 (10/10)" and table["0.6"][3].strip() == "1.000 (20/20)"


def test_correctness_can_be_read_from_another_score_falling_back_to_ex(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    rows = [
        # the columns in another order: wrong under ex, right under Spider's match
        QuestionResult(
            id="swapped",
            position=0,
            question="q",
            database="db",
            scores={"ex": 0.0, "spider_ex": 1.0},
            system_metadata={"signals": {}},
        ),
        QuestionResult(  # scored without spider_ex (an AutoFin answer): ex decides
            id="plain",
            position=1,
            question="q",
            database="db",
            scores={"ex": 1.0},
            system_metadata={"signals": {}},
        ),
    ]
    (folder / "results.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in rows))
    assert [s.correct for s in read_run("r", folder)] == [False, True]
    assert [s.correct for s in read_run("r", folder, "spider_ex")] == [True, True]


def test_a_given_calibrator_is_measured_beside_the_recorded_confidence(tmp_path, capsys):
    _run(tmp_path / "a", 90, 1, ids="a")
    _run(tmp_path / "b", 60, 2, ids="b")
    _run(tmp_path / "unseen", 30, 5, ids="c")
    candidate = tmp_path / "candidate.json"
    assert (
        main(["report", f"a={tmp_path / 'a'}", f"b={tmp_path / 'b'}", "--write", str(candidate)])
        == 0
    )
    capsys.readouterr()
    argv = ["report", f"unseen={tmp_path / 'unseen'}", "--calibrator", str(candidate)]
    assert main([*argv, "--abstain-fit", "given"]) == 0
    out = capsys.readouterr().out
    head = next(x for x in out.splitlines() if x.startswith("| set |")).split("|")
    row = next(x for x in out.splitlines() if x.startswith("| unseen |")).split("|")
    assert head[6].strip() == "given AUROC" and row[6].strip() == "1.000"  # recorded: 0.500
    assert row[4].strip() == "0.500"
    assert "abstention (given calibrator)" in out
    table = {
        x.split("|")[1].strip(): x.split("|") for x in out.splitlines() if x.startswith("| 0.")
    }
    assert table["0.5"][3].strip() == "0.000 (0/20)" and table["0.5"][4].strip() == "1.000 (10/10)"
    assert main([*argv[:2], "--abstain-fit", "given"]) == 2
    assert "--abstain-fit given needs --calibrator" in capsys.readouterr().err
    (tmp_path / "broken.json").write_text("not json")
    assert main([*argv[:2], "--calibrator", str(tmp_path / "broken.json")]) == 2
