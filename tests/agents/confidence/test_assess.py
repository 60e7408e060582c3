"""Where the calibrator comes from: the deployment's file (reloaded when it changes), else the
packaged one; a damaged file never stops an answer."""

from __future__ import annotations

import os
import random

import pytest

from agents.confidence.assess import (
    CalibratorSource,
    ConfidenceOptions,
    describe,
    packaged_calibrator,
)
from agents.confidence.calibrator import fit_calibrator, prior_calibrator


def _fitted(version_of=None):
    rng = random.Random(0)
    rows = [{"x": rng.gauss(0, 1)} for _ in range(200)]
    labels = [row["x"] + rng.gauss(0, 0.5) > 0 for row in rows]
    return fit_calibrator(rows, labels, previous=version_of, source="deployment")


def test_the_deployments_file_wins_and_is_reloaded_when_it_changes(tmp_path):
    path = tmp_path / "calibrator.json"
    source = CalibratorSource(path, fallback=prior_calibrator())
    assert source.current().method == "prior"  # no file yet
    first = _fitted()
    first.save(path)
    assert source.current().version == first.version == 1
    second = _fitted(first)
    second.save(path)
    os.utime(path, (path.stat().st_atime, path.stat().st_mtime + 5))
    assert source.current().version == 2
    assert describe(source.current()) == "logistic v2 (deployment, 200 answers)"


def test_a_damaged_file_falls_back_and_says_so(tmp_path, caplog):
    path = tmp_path / "calibrator.json"
    path.write_text("{not json")
    source = CalibratorSource(path, fallback=prior_calibrator())
    assert source.current().method == "prior"
    assert "cannot load calibrator" in caplog.text and str(path) in caplog.text


def test_the_packaged_calibrator_loads():
    calibrator = packaged_calibrator()
    assert calibrator.method in ("logistic", "prior")
    assert 0.0 <= calibrator.predict({"span_coverage": 1.0, "samples": 1.0}) <= 1.0


def test_options_are_checked():
    with pytest.raises(ValueError, match="abstain_below"):
        ConfidenceOptions(abstain_below=1.5)
    with pytest.raises(ValueError, match="max_samples"):
        ConfidenceOptions(max_samples=0)
