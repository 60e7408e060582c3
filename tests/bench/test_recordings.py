"""Calibration recordings (``bench.recordings``, ``python -m bench.calibration export``): the
answers a calibrator is fitted on, written to a small file the repository keeps and read by
``report`` in place of the run folder."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from agents.confidence.calibrator import Calibrator
from agents.confidence.recorded_answers import RecordedAnswersError, read_recording
from bench.calibration import main
from bench.recordings import export_run, read_scored
from bench.run import COMMITS, source_commit, write_run_manifest
from tests.bench.test_calibration_report import _run, _unanswerable


def _recorded_run(folder: Path, n: int, seed: int, ids: str = "q") -> None:
    """A handmade run folder with the run.json every ``bench run`` writes."""
    _run(folder, n, seed, ids=ids)
    (folder / "run.json").write_text(json.dumps({"system": "almanac", "questions": n}))


def _report_rows(capsys, argv: list[str]) -> dict[str, str]:
    assert main(["report", *argv]) == 0
    out = capsys.readouterr().out
    return {line.split("|")[1].strip(): line for line in out.splitlines() if line.startswith("| ")}


def test_a_recording_reports_as_its_folder_does(tmp_path, capsys):
    _recorded_run(tmp_path / "a", 90, 1, ids="a")
    _recorded_run(tmp_path / "b", 60, 2, ids="b")
    _unanswerable(tmp_path / "u", 20)
    recorded = {}
    for name in ("a", "b"):
        recorded[name] = tmp_path / "rec" / f"{name}.jsonl.gz"
        argv = ["export", "--run", str(tmp_path / name), "--set", name, "--commit", "abc123"]
        assert main([*argv, "--out", str(recorded[name])]) == 0
    unanswerable = tmp_path / "rec" / "unanswerable.jsonl.gz"
    argv = ["export", "--unanswerable", str(tmp_path / "u"), "--commit", "abc123"]
    assert main([*argv, "--command-line", "ask it", "--out", str(unanswerable)]) == 0
    assert "recorded 20 answers" in capsys.readouterr().out

    from_folders = _report_rows(
        capsys,
        [f"a={tmp_path / 'a'}", f"b={tmp_path / 'b'}", "--unanswerable", str(tmp_path / "u")],
    )
    from_recordings = _report_rows(
        capsys,
        [f"a={recorded['a']}", f"b={recorded['b']}", "--unanswerable", str(unanswerable)],
    )
    assert from_recordings == from_folders and "a" in from_recordings and "0.5" in from_recordings

    header, rows = read_recording(unanswerable)
    assert header["kind"] == "unanswerable" and header["commits"] == ["abc123"]
    assert header["command"] == "ask it" and len(rows) == 20
    answers = read_scored(recorded["a"])
    name = answers[0].set_name
    assert name == "a" and len(answers) == 90 and answers[0].features["samples"] == 1.0


def test_a_recording_is_the_same_bytes_when_exported_again(tmp_path):
    _recorded_run(tmp_path / "a", 10, 1)
    first, second = tmp_path / "1.jsonl.gz", tmp_path / "2.jsonl.gz"
    assert export_run(tmp_path / "a", "a", first, commits=["c1"]) == 10
    assert export_run(tmp_path / "a", "a", second, commits=["c1"]) == 10
    assert first.read_bytes() == second.read_bytes()


def test_a_recording_takes_the_runs_commits_and_refuses_without_any(tmp_path, capsys):
    _run(tmp_path / "a", 10, 1)
    out = tmp_path / "a.jsonl.gz"
    argv = ["export", "--run", str(tmp_path / "a"), "--set", "a", "--out", str(out)]
    assert main(argv) == 2  # _run writes no run.json
    assert "no run.json" in capsys.readouterr().err
    (tmp_path / "a" / "run.json").write_text(json.dumps({"system": "x"}))
    assert main(argv) == 2 and "give them with --commit" in capsys.readouterr().err
    (tmp_path / "a" / "run.json").write_text(json.dumps({"system": "x", COMMITS: ["c9"]}))
    assert main(argv) == 0
    header, _ = read_recording(out)
    assert header["commits"] == ["c9"] and header["manifest"]["system"] == "x"
    assert main([*argv[:5], "--out", str(tmp_path / "a.jsonl")]) == 2  # not a recording name
    assert "ends with .jsonl.gz" in capsys.readouterr().err
    assert main(["export", "--run", str(tmp_path / "a"), "--out", str(out)]) == 2
    assert "needs --set" in capsys.readouterr().err


def test_a_broken_recording_is_refused_with_its_path(tmp_path, capsys):
    _recorded_run(tmp_path / "a", 10, 1)
    good = tmp_path / "good.jsonl.gz"
    export_run(tmp_path / "a", "a", good, commits=["c1"])
    with gzip.open(good, "rt") as stream:
        lines = stream.read().splitlines()
    short = tmp_path / "short.jsonl.gz"
    with gzip.open(short, "wt") as stream:
        stream.write("\n".join(lines[:-1]) + "\n")  # one answer lost
    with pytest.raises(RecordedAnswersError, match="header says 10 answers, holds 9"):
        read_recording(short)
    plain = tmp_path / "plain.jsonl.gz"
    plain.write_text("not gzip")
    assert main(["report", f"a={plain}"]) == 2
    assert "plain.jsonl.gz: not a readable recording" in capsys.readouterr().err
    assert main(["report", f"a={tmp_path / 'gone.jsonl.gz'}"]) == 2
    assert "no such recording" in capsys.readouterr().err


def test_a_run_records_the_commits_it_was_answered_at(tmp_path):
    folder = tmp_path / "run"
    write_run_manifest(folder, {"system": "x"}, fresh=True)
    current = source_commit()
    assert current is not None  # the tests run from a git checkout
    manifest = json.loads((folder / "run.json").read_text())
    assert manifest == {"system": "x", COMMITS: [current]}
    # resumed at another commit: both are kept, in order; the run is still the same run
    (folder / "run.json").write_text(json.dumps({"system": "x", COMMITS: ["older"]}))
    write_run_manifest(folder, {"system": "x"}, fresh=False)
    assert json.loads((folder / "run.json").read_text())[COMMITS] == ["older", current]
    with pytest.raises(ValueError, match="holds another run"):
        write_run_manifest(folder, {"system": "y"}, fresh=False)


def test_a_calibrator_written_from_packaged_recordings_names_them(tmp_path, capsys, monkeypatch):
    """``report --write`` from recordings beside the packaged calibrator lists them (a
    deployment's refit fits on them); from anything else it lists none and says so."""
    import bench.calibration as calibration

    for name, seed in (("a", 1), ("b", 2)):
        _recorded_run(tmp_path / name, 60, seed, ids=name)
        export_run(tmp_path / name, name, tmp_path / f"{name}.jsonl.gz", commits=["c1"])
    monkeypatch.setattr(calibration, "PACKAGED_FOLDER", tmp_path)
    written = tmp_path / "calibrator.json"
    sets = [f"a={tmp_path / 'a.jsonl.gz'}", f"b={tmp_path / 'b.jsonl.gz'}"]
    assert main(["report", *sets, "--write", str(written)]) == 0
    assert Calibrator.load(written).recordings == ["a.jsonl.gz", "b.jsonl.gz"]
    capsys.readouterr()
    assert main(["report", sets[0], f"b={tmp_path / 'b'}", "--write", str(written)]) == 0
    assert Calibrator.load(written).recordings == []
    assert "a refit will" in capsys.readouterr().out
