"""Recorded answers (``agents.confidence.recorded_answers``) and the refit that fits on the
packaged ones beside the deployment's verdicts (``agents.confidence.refit``)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from agents.confidence.assess import packaged_calibrator
from agents.confidence.calibrator import Calibrator
from agents.confidence.recorded_answers import (
    PACKAGED_FOLDER,
    RecordedAnswersError,
    fitting_answers,
    packaged_answers,
    read_recording,
    write_recording,
)
from agents.confidence.refit import refit_calibrator
from kb.store import KnowledgeStore
from ukf import ExperienceUKF


def _signals(good: bool, rng: random.Random) -> dict[str, float]:
    return {"logprob_mean": rng.gauss(-0.15 if good else -0.6, 0.2), "samples": 1.0}


def _record(folder: Path, name: str, right: int, wrong: int, seed: int = 0) -> Path:
    rng = random.Random(seed)
    rows = [
        {
            "id": f"{name}{i}",
            "signals": _signals(i < right, rng),
            "scores": {"ex": float(i < right)},
        }
        for i in range(right + wrong)
    ]
    path = folder / f"{name}.jsonl.gz"
    write_recording(path, {"set": name, "kind": "run", "commits": ["c1"], "command": "x"}, rows)
    return path


def _judged(store: KnowledgeStore, right: int, wrong: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    entries = []
    for i in range(right + wrong):
        entry = ExperienceUKF.create(f"judged question {i}", "SELECT 1", database="db")
        verdict = "correct" if i < right else "wrong"
        record = {"sql": "SELECT 1", "signals": _signals(i < right, rng), "verdict": verdict}
        resources = {**entry.content_resources, "answers": {f"a{i}": record}}
        entries.append(entry.clone(content_resources=resources))
    store.upsert_many(entries)


def test_recordings_read_back_as_rows_and_verdicts(tmp_path):
    run = _record(tmp_path, "spider", right=30, wrong=20)
    unanswerable = tmp_path / "unanswerable.jsonl.gz"
    rows = [{"id": "u1", "signals": {"logprob_mean": -1.0}}, {"id": "u2", "signals": {}}]
    header = {"set": "unanswerable", "kind": "unanswerable", "commits": ["c1"], "command": "x"}
    write_recording(unanswerable, header, rows)
    found = fitting_answers([run, unanswerable])
    assert len(found) == 52 and sum(found.labels) == 30  # no unanswerable answer is right
    assert found.sources == ["spider.jsonl.gz", "unanswerable.jsonl.gz"]
    assert packaged_answers(["spider.jsonl.gz"], folder=tmp_path).labels == found.labels[:50]


def test_a_broken_recording_says_which_file_and_why(tmp_path):
    with pytest.raises(RecordedAnswersError, match=r"name ends with \.jsonl\.gz"):
        write_recording(tmp_path / "x.jsonl", {"set": "x"}, [{"id": "1", "signals": {}}])
    with pytest.raises(RecordedAnswersError, match="no answers to record"):
        write_recording(tmp_path / "x.jsonl.gz", {"set": "x"}, [])
    with pytest.raises(RecordedAnswersError, match=r"gone\.jsonl\.gz: no such recording"):
        read_recording(tmp_path / "gone.jsonl.gz")
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(b"plain text")
    with pytest.raises(RecordedAnswersError, match=r"bad\.jsonl\.gz: not a readable recording"):
        fitting_answers([bad])
    no_signals = tmp_path / "no_signals.jsonl.gz"
    write_recording(no_signals, {"set": "x"}, [{"id": "1"}])
    with pytest.raises(RecordedAnswersError, match="an answer without signals"):
        read_recording(no_signals)


def test_a_refit_fits_on_the_packaged_answers_beside_the_deployments(tmp_path):
    bench = fitting_answers([_record(tmp_path, "bench", right=120, wrong=80)])
    current = packaged_calibrator()
    with KnowledgeStore(f"sqlite:///{tmp_path / 'knowledge.db'}") as store:
        _judged(store, right=10, wrong=5)
        # too few of the deployment's own: the packaged answers do not make up for them
        short = refit_calibrator(store, tmp_path / "c.json", current, packaged=bench)
        assert not short.written and "15 verified answers" in short.note
        _judged(store, right=30, wrong=20, seed=2)
        report = refit_calibrator(store, tmp_path / "c.json", current, packaged=bench)
        alone = refit_calibrator(store, tmp_path / "alone.json", current)
    assert report.written and report.answers == 50 and report.packaged == 200
    assert "50 verified answers (30 correct) and 200 recorded bench answers" in report.summary()
    pooled = Calibrator.load(tmp_path / "c.json")
    assert pooled.fitted_on.examples == 250 and pooled.recordings == ["bench.jsonl.gz"]
    assert pooled.source == "deployment+recordings"
    solo = Calibrator.load(tmp_path / "alone.json")
    assert solo.fitted_on.examples == 50 and solo.recordings == [] and alone.packaged == 0
    assert solo.source == "deployment"


def test_the_packaged_calibrator_and_recordings_agree():
    """Every recording the packaged calibrator names lies beside it and reads; every
    packaged recording says what code recorded it and how."""
    for name in packaged_calibrator().recordings:
        assert (PACKAGED_FOLDER / name).is_file(), name
    for path in sorted(PACKAGED_FOLDER.glob("*.jsonl.gz")):
        header, rows = read_recording(path)
        assert header["commits"] and header["command"] and header["set"], path
        assert rows, path
