"""Calibration metrics on hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from agents.confidence.metrics import (
    auroc,
    brier,
    expected_calibration_error,
    reliability_table,
    sampling_ece,
)


def test_auroc_of_a_perfect_a_reversed_and_a_tied_ranking() -> None:
    labels = [False, False, True, True]
    assert auroc([0.1, 0.2, 0.8, 0.9], labels) == 1.0
    assert auroc([0.9, 0.8, 0.2, 0.1], labels) == 0.0
    assert auroc([0.5, 0.5, 0.5, 0.5], labels) == 0.5
    # one of the four (wrong, right) pairs misordered: 3/4
    assert auroc([0.1, 0.7, 0.6, 0.9], labels) == pytest.approx(0.75)


def test_auroc_is_none_with_one_class() -> None:
    assert auroc([0.1, 0.9], [True, True]) is None
    assert auroc([0.1, 0.9], [False, False]) is None
    assert auroc([], []) is None


def test_ece_of_a_perfectly_calibrated_set_is_zero() -> None:
    probs = [0.3] * 10 + [0.7] * 10
    labels = [True] * 3 + [False] * 7 + [True] * 7 + [False] * 3
    assert expected_calibration_error(probs, labels) == pytest.approx(0.0)


def test_ece_of_a_sampled_calibrated_set_is_near_zero() -> None:
    rng = np.random.default_rng(0)
    probs = rng.random(100_000)
    labels = rng.random(100_000) < probs
    assert expected_calibration_error(probs.tolist(), labels.tolist()) < 0.01


def test_ece_of_an_overconfident_set_is_the_hand_computed_value() -> None:
    # 90 % sure, right half the time: |0.5 - 0.9| = 0.4
    assert expected_calibration_error([0.9] * 10, [True, False] * 5) == pytest.approx(0.4)
    # bin [0.2, 0.3): 4 at 0.25 with 1 right (gap 0); bin [0.9, 1]: 6 at 0.95 with 3 right
    # (gap 0.45); weighted: (4 * 0 + 6 * 0.45) / 10 = 0.27
    probs = [0.25] * 4 + [0.95] * 6
    labels = [True, False, False, False, True, True, True, False, False, False]
    assert expected_calibration_error(probs, labels) == pytest.approx(0.27)


def test_ece_depends_on_the_bins() -> None:
    probs = [0.15, 0.35]
    labels = [False, True]
    # ten bins: two one-answer bins, gaps 0.15 and 0.65 → 0.4
    assert expected_calibration_error(probs, labels) == pytest.approx(0.4)
    # one bin: mean confidence 0.25, accuracy 0.5 → 0.25
    assert expected_calibration_error(probs, labels, bins=1) == pytest.approx(0.25)


def test_reliability_table_counts_means_and_edges() -> None:
    table = reliability_table([0.0, 0.05, 0.1, 0.55, 1.0], [False, True, True, True, True])
    assert len(table) == 10
    assert [row.count for row in table] == [2, 1, 0, 0, 0, 1, 0, 0, 0, 1]
    assert table[0].lower == 0.0 and table[0].upper == pytest.approx(0.1)
    assert table[0].mean_confidence == pytest.approx(0.025)
    assert table[0].accuracy == pytest.approx(0.5)
    assert table[1].mean_confidence == pytest.approx(0.1)  # 0.1 opens the second bin
    assert table[2].mean_confidence is None and table[2].accuracy is None
    assert table[9].count == 1 and table[9].accuracy == 1.0  # p = 1 is in the last bin


def test_brier_is_the_mean_squared_error() -> None:
    assert brier([1.0, 0.0, 0.5], [True, True, False]) == pytest.approx((0 + 1 + 0.25) / 3)
    assert brier([0.5] * 4, [True, False, True, False]) == pytest.approx(0.25)


@pytest.mark.parametrize("bad", [1.2, -0.1, float("nan")])
def test_a_probability_outside_0_1_is_refused_with_its_value(bad: float) -> None:
    with pytest.raises(ValueError, match="index 1"):
        expected_calibration_error([0.5, bad], [True, False])
    with pytest.raises(ValueError, match="not in"):
        brier([bad], [True])


def test_mismatched_or_empty_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="2 probabilities but 1 labels"):
        brier([0.1, 0.2], [True])
    with pytest.raises(ValueError, match="2 scores but 1 labels"):
        auroc([0.1, 0.2], [True])
    with pytest.raises(ValueError, match="no probabilities"):
        expected_calibration_error([], [])


def test_sampling_ece_is_the_floor_a_calibrated_confidence_shows_at_a_set_size():
    probs = [0.2, 0.5, 0.7, 0.9] * 15  # 60 answers
    small = sampling_ece(probs)
    large = sampling_ece(probs * 20)  # 1,200 answers
    assert 0.05 < small < 0.2 and large < small / 3  # the bias shrinks as the set grows
    assert sampling_ece(probs) == small  # seeded: the same floor every time
    assert sampling_ece([0.0, 1.0] * 30) == 0.0  # certain answers leave nothing to chance
    with pytest.raises(ValueError, match="outside"):
        sampling_ece([0.5, 1.5])
    with pytest.raises(ValueError, match="no probabilities"):
        sampling_ece([])
