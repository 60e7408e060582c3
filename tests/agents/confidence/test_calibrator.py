"""The calibrator: fitting on synthetic data, missing features, JSON, versions, the prior."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from agents.confidence.calibrator import (
    FORMAT_VERSION,
    Calibrator,
    CalibratorLoadError,
    fit_calibrator,
    prior_calibrator,
)
from agents.confidence.metrics import auroc, expected_calibration_error
from agents.confidence.prior import TERMS, PriorTerm, prior_probability

Rows = list[dict[str, float]]


def synthetic(n: int, seed: int, missing_x1: float = 0.0) -> tuple[Rows, list[bool], list[float]]:
    """P(correct) = sigmoid(2 x1 - x2), plus a noise feature; x1 dropped from a share of the
    rows at random. Returns the rows, the sampled labels and the true probabilities."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    p = 1.0 / (1.0 + np.exp(-(2.0 * x[:, 0] - x[:, 1])))
    labels = (rng.random(n) < p).tolist()
    rows: Rows = [{"x1": a, "x2": b, "noise": c} for a, b, c in x.tolist()]
    for row in rows:
        if rng.random() < missing_x1:
            del row["x1"]
    return rows, labels, p.tolist()


def test_fitted_on_sigmoid_data_it_is_calibrated_and_ranks_like_the_true_model() -> None:
    rows, labels, _ = synthetic(2000, seed=1)
    held_rows, held_labels, truth = synthetic(5000, seed=2)
    calibrator = fit_calibrator(rows, labels, source="synthetic")
    assert calibrator.method == "logistic"
    assert calibrator.fitted_on.examples == 2000
    assert calibrator.fitted_on.positives == sum(labels)
    assert calibrator.feature_names == ["noise", "x1", "x2"]
    assert calibrator.C is not None and calibrator.fitted_at.startswith("20")
    probs = calibrator.predict_many(held_rows)
    assert all(0.0 <= p <= 1.0 for p in probs)
    assert expected_calibration_error(probs, held_labels) < 0.05
    best, ours = auroc(truth, held_labels), auroc(probs, held_labels)
    assert best is not None and ours is not None
    assert ours > best - 0.01
    # the standardised coefficients point the generating model's way, noise near zero
    noise, x1, x2 = calibrator.coefficients
    assert x1 > 1.5 and x2 < -0.7 and abs(noise) < 0.2


def test_missing_features_are_imputed_with_an_indicator() -> None:
    rows, labels, _ = synthetic(2000, seed=3, missing_x1=0.3)
    held_rows, held_labels, _ = synthetic(4000, seed=4, missing_x1=0.3)
    calibrator = fit_calibrator(rows, labels, source="synthetic")
    assert calibrator.missing_indicators == ["x1"]
    assert calibrator.columns == ["noise", "x1", "x2", "x1_missing"]
    assert expected_calibration_error(calibrator.predict_many(held_rows), held_labels) < 0.05
    # absent, None and NaN are all "missing"; an unknown feature is ignored
    absent = calibrator.predict({"x2": 0.5, "noise": 0.0})
    assert calibrator.predict({"x2": 0.5, "noise": 0.0, "x1": math.nan}) == absent
    assert calibrator.predict({"x2": 0.5, "noise": 0.0, "x1": None}) == absent  # type: ignore[dict-item]
    assert calibrator.predict({"x2": 0.5, "noise": 0.0, "other": 9.0}) == absent
    # a missing x1 says nothing about it, so it lands between a high and a low x1
    low = calibrator.predict({"x2": 0.5, "noise": 0.0, "x1": -2.0})
    high = calibrator.predict({"x2": 0.5, "noise": 0.0, "x1": 2.0})
    assert low < absent < high
    assert 0.0 <= calibrator.predict({}) <= 1.0


def test_a_feature_never_missing_in_training_is_imputed_without_an_indicator() -> None:
    rows, labels, _ = synthetic(500, seed=5)
    calibrator = fit_calibrator(rows, labels, source="synthetic")
    assert calibrator.missing_indicators == []
    mean_x1 = calibrator.impute[calibrator.feature_names.index("x1")]
    row = {"x2": 0.1, "noise": 0.0}
    assert calibrator.predict(row) == pytest.approx(calibrator.predict({**row, "x1": mean_x1}))


def test_json_round_trip_and_save_load_give_identical_predictions(tmp_path: Path) -> None:
    rows, labels, _ = synthetic(800, seed=6, missing_x1=0.2)
    calibrator = fit_calibrator(rows, labels, source="bench:spider_dev+geoquery")
    again = Calibrator.from_json(calibrator.to_json())
    assert again == calibrator
    assert again.predict_many(rows) == calibrator.predict_many(rows)
    path = tmp_path / "models" / "calibrator.json"
    calibrator.save(path)
    loaded = Calibrator.load(path)
    assert loaded.predict_many(rows) == calibrator.predict_many(rows)
    assert loaded.source == "bench:spider_dev+geoquery"
    assert json.loads(path.read_text())["format"] == FORMAT_VERSION  # plain JSON
    assert [p.name for p in path.parent.iterdir()] == ["calibrator.json"]  # no partial left


def test_a_prior_round_trips_too(tmp_path: Path) -> None:
    prior = prior_calibrator(source="install")
    prior.save(tmp_path / "c.json")
    loaded = Calibrator.load(tmp_path / "c.json")
    assert loaded.method == "prior"
    features = {"logprob_mean": -0.4, "empty_result": 1.0}
    assert loaded.predict(features) == prior_probability(features)


def test_version_increases_with_each_refit() -> None:
    rows, labels, _ = synthetic(300, seed=7)
    first = fit_calibrator(rows, labels, source="deployment")
    second = fit_calibrator(rows, labels, source="deployment", previous=first)
    assert (first.version, second.version) == (1, 2)
    fallback = fit_calibrator(rows[:5], labels[:5], source="deployment", previous=second)
    assert fallback.method == "prior" and fallback.version == 3


def test_too_few_examples_give_the_prior_with_the_reason() -> None:
    rows, labels, _ = synthetic(30, seed=8)
    calibrator = fit_calibrator(rows, labels, source="deployment")
    assert calibrator.method == "prior"
    assert "30 verified answers" in calibrator.note and "40" in calibrator.note
    assert calibrator.fitted_on.examples == 30
    row = {"logprob_mean": -0.2, "span_coverage": 1.0}
    assert calibrator.predict(row) == prior_probability(row)


def test_one_class_or_too_few_of_one_give_the_prior() -> None:
    rows, _, _ = synthetic(100, seed=9)
    all_right = fit_calibrator(rows, [True] * 100, source="deployment")
    assert all_right.method == "prior"
    assert "100 correct and 0 wrong" in all_right.note
    few_wrong = fit_calibrator(rows, [True] * 95 + [False] * 5, source="deployment")
    assert few_wrong.method == "prior" and "fewer than 8 of each" in few_wrong.note
    enough = fit_calibrator(rows, [True] * 92 + [False] * 8, source="deployment")
    assert enough.method == "logistic"


def test_at_least_two_of_each_class_are_needed_whatever_the_minimum() -> None:
    rows, _, _ = synthetic(50, seed=14)
    labels = [True] * 49 + [False]
    calibrator = fit_calibrator(rows, labels, source="x", min_examples=10, min_per_class=1)
    assert calibrator.method == "prior" and "fewer than 2 of each" in calibrator.note
    labels = [True] * 48 + [False] * 2
    calibrator = fit_calibrator(rows, labels, source="x", min_examples=10, min_per_class=1)
    assert calibrator.method == "logistic"


def test_rows_without_features_give_the_prior() -> None:
    calibrator = fit_calibrator([{}] * 50, [True, False] * 25, source="deployment")
    assert calibrator.method == "prior" and "no features" in calibrator.note


def test_mismatched_rows_and_labels_are_refused() -> None:
    with pytest.raises(ValueError, match="3 rows but 2 labels"):
        fit_calibrator([{}, {}, {}], [True, False], source="x")


def step_data(n: int, seed: int) -> tuple[Rows, list[bool]]:
    """P(correct) = 0.9 above x = 0.5 and 0.25 below: no logistic curve in x fits it."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    labels = (rng.random(n) < np.where(x > 0.5, 0.9, 0.25)).tolist()
    return [{"x": v} for v in x.tolist()], labels


def test_isotonic_is_kept_when_it_calibrates_better_on_held_out_data() -> None:
    rows, labels = step_data(3000, seed=10)
    held_rows, held_labels = step_data(5000, seed=11)
    both = fit_calibrator(rows, labels, source="synthetic")
    plain = fit_calibrator(rows, labels, source="synthetic", isotonic_min_examples=None)
    assert both.isotonic is not None and "logistic + isotonic" in both.note
    assert plain.isotonic is None
    ece_both = expected_calibration_error(both.predict_many(held_rows), held_labels)
    ece_plain = expected_calibration_error(plain.predict_many(held_rows), held_labels)
    assert ece_both < ece_plain
    assert Calibrator.from_json(both.to_json()).predict_many(held_rows[:50]) == (
        both.predict_many(held_rows[:50])
    )


def test_isotonic_is_dropped_when_the_logistic_curve_is_already_right() -> None:
    # on sigmoid data an isotonic map only adds steps: the held-out Brier score is worse
    rows, labels, _ = synthetic(2000, seed=1)
    calibrator = fit_calibrator(rows, labels, source="synthetic")
    assert calibrator.isotonic is None and "isotonic did not help" in calibrator.note


def test_isotonic_is_not_considered_below_its_minimum() -> None:
    rows, labels = step_data(150, seed=12)
    calibrator = fit_calibrator(rows, labels, source="synthetic")
    assert calibrator.isotonic is None and "isotonic needs 200" in calibrator.note


def test_a_corrupt_file_raises_with_its_path(tmp_path: Path) -> None:
    path = tmp_path / "calibrator.json"
    path.write_text('{"format": 1, "version": ')
    with pytest.raises(CalibratorLoadError, match=re.escape(str(path))):
        Calibrator.load(path)
    path.write_text('{"format": 1, "version": 2}')
    with pytest.raises(CalibratorLoadError, match="not a calibrator"):
        Calibrator.load(path)
    path.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(CalibratorLoadError, match=re.escape(str(path))):
        Calibrator.load(path)
    with pytest.raises(CalibratorLoadError, match=re.escape(str(tmp_path / "absent.json"))):
        Calibrator.load(tmp_path / "absent.json")


def test_a_future_format_or_inconsistent_file_is_refused(tmp_path: Path) -> None:
    rows, labels, _ = synthetic(200, seed=13)
    data = json.loads(fit_calibrator(rows, labels, source="x").to_json())
    path = tmp_path / "calibrator.json"
    path.write_text(json.dumps({**data, "format": FORMAT_VERSION + 1}))
    with pytest.raises(CalibratorLoadError, match=re.escape(str(path)) + ".*newer"):
        Calibrator.load(path)
    path.write_text(json.dumps({**data, "coefficients": data["coefficients"][:-1]}))
    with pytest.raises(CalibratorLoadError, match="inconsistent sizes"):
        Calibrator.load(path)
    path.write_text(json.dumps({**data, "intercept": 0.1, "coefficients": ["a"] * 3}))
    with pytest.raises(CalibratorLoadError, match="not a number"):
        Calibrator.load(path)
    path.write_text(json.dumps({**data, "method": "forest"}))
    with pytest.raises(CalibratorLoadError, match="unknown method 'forest'"):
        Calibrator.load(path)


GOOD = {
    "samples": 5.0,
    "vote_share": 1.0,
    "logprob_mean": -0.05,
    "empty_result": 0.0,
    "degenerate_result": 0.0,
    "shape_mismatch": 0.0,
    "unmatched_content_words": 0.0,
    "span_coverage": 1.0,
    "plain_fallback": 0.0,
    "repairs": 0.0,
}
BAD = {
    **GOOD,
    "vote_share": 0.4,
    "logprob_mean": -1.2,
    "empty_result": 1.0,
    "unmatched_content_words": 3.0,
    "span_coverage": 0.3,
}


def test_the_prior_puts_a_good_looking_answer_high_and_a_bad_looking_one_low() -> None:
    good, bad, nothing = prior_probability(GOOD), prior_probability(BAD), prior_probability({})
    assert good > 0.85 and bad < 0.1
    assert bad < nothing < good


@pytest.mark.parametrize("term", TERMS, ids=lambda term: term.name)
def test_each_prior_signal_moves_the_probability_its_way(term: PriorTerm) -> None:
    low = prior_probability({**GOOD, term.name: term.low})
    high = prior_probability({**GOOD, term.name: term.high})
    assert (high > low) == (term.coefficient > 0) and high != low


def test_the_prior_reads_vote_share_only_when_several_samples_voted_and_numbers_only() -> None:
    one = {**GOOD, "samples": 1.0}
    assert prior_probability({**one, "vote_share": 0.2}) == prior_probability(
        {**one, "vote_share": 1.0}
    )
    without = prior_probability({k: v for k, v in GOOD.items() if k != "logprob_mean"})
    assert prior_probability({**GOOD, "logprob_mean": math.inf}) == without
    assert prior_probability({**GOOD, "logprob_mean": "high"}) == without  # type: ignore[dict-item]
