"""``python -m bench.refit_curve``: a deployment's calibrate job with and without the
packaged answers, on recorded sets written by hand."""

from __future__ import annotations

import random

from agents.confidence.recorded_answers import write_recording
from bench.refit_curve import main


def _recording(path, n: int, seed: int, shift: float) -> None:
    """Answers whose ``logprob_mean`` says whether they are right; ``shift`` moves the
    signal (a deployment whose model is surer of itself than the bench's)."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        right = rng.random() < 0.6
        mean = (-0.2 if right else -0.8) + shift
        rows.append(
            {
                "id": f"{path.stem}{i}",
                "signals": {"logprob_mean": rng.gauss(mean, 0.25)},
                "scores": {"ex": float(right)},
            }
        )
    header = {"set": path.name, "kind": "run", "commits": ["c"], "command": "hand"}
    write_recording(path, header, rows)


def test_the_curve_measures_each_fit_on_the_answers_still_to_come(tmp_path, capsys):
    deployment, bench = tmp_path / "dep.jsonl.gz", tmp_path / "bench.jsonl.gz"
    _recording(deployment, 200, 1, shift=0.5)
    _recording(bench, 300, 2, shift=0.0)
    argv = ["--deployment", f"dep={deployment}", f"bench={bench}", "--sizes", "20,60,120"]
    assert main([*argv, "--draws", "4", "--out", str(tmp_path / "curve.md")]) == 0
    out = capsys.readouterr().out
    rows = [
        line.split("|") for line in out.splitlines() if line.startswith("| ") and "---" not in line
    ]
    table = {int(r[1]): [c.strip() for c in r[3:6]] for r in rows[1:]}
    assert sorted(table) == [20, 60, 120]
    assert len(set(table[20])) == 1  # under the minimum of 40 nothing is refitted
    for verdicts in (60, 120):
        packaged, alone, pooled = (float(c.split(" / ")[1]) for c in table[verdicts])
        # the shifted deployment: the packaged fit is off, its own verdicts calibrate it
        assert alone < packaged and pooled < packaged
    assert (tmp_path / "curve.md").read_text().startswith("deployment: dep")


def test_more_verdicts_than_answers_is_refused(tmp_path, capsys):
    deployment = tmp_path / "dep.jsonl.gz"
    _recording(deployment, 50, 1, shift=0.0)
    argv = ["--deployment", f"dep={deployment}", f"b={deployment}", "--sizes", "50"]
    assert main([*argv, "--draws", "1"]) == 2
    assert "50 verdicts out of a deployment of 50 answers" in capsys.readouterr().err
