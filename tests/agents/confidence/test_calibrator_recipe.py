"""The fitting recipe: features never read, absences without an indicator, and files written
by the earlier recipe (every feature read, every absence indicated) still loading."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from agents.confidence.calibrator import (
    IGNORED_FEATURES,
    STRUCTURAL_ABSENCE,
    Calibrator,
    fit_calibrator,
)
from agents.confidence.metrics import auroc

Rows = list[dict[str, float]]


def confounded(n: int, seed: int) -> tuple[Rows, list[bool]]:
    """P(correct) = sigmoid(2 x); half the rows come from a "vote" run (5 samples, a vote
    share) that is right more often whatever x says, the other half are greedy (1 sample, no
    vote share): ``samples`` then tells the runs apart, not good answers from bad ones."""
    rng = np.random.default_rng(seed)
    rows: Rows = []
    labels: list[bool] = []
    for i in range(n):
        x = float(rng.normal())
        vote = i % 2 == 0
        p = 1.0 / (1.0 + np.exp(-(2.0 * x + (1.5 if vote else -1.5))))
        row = {"x": x, "samples": 5.0 if vote else 1.0}
        if vote:
            row["vote_share"] = float(rng.uniform(0.4, 1.0))
        rows.append(row)
        labels.append(bool(rng.random() < p))
    return rows, labels


def test_the_recipe_names_what_it_leaves_out() -> None:
    assert {"samples", "distinct_results"} == IGNORED_FEATURES
    assert {"vote_share", "nearest_example_similarity", "sql_logprob_min"} <= STRUCTURAL_ABSENCE
    assert not IGNORED_FEATURES & STRUCTURAL_ABSENCE


def test_ignored_features_are_not_read_and_structural_absences_get_no_indicator() -> None:
    rows, labels = confounded(600, seed=1)
    fitted = fit_calibrator(rows, labels, source="bench")
    assert fitted.feature_names == ["vote_share", "x"]
    assert fitted.missing_indicators == []  # vote_share is missing from every greedy row
    assert fitted.columns == ["vote_share", "x"]
    # a missing vote share is its training mean: the same as stating that mean
    mean_share = fitted.impute[0]
    row = {"x": 0.3, "samples": 1.0}
    assert fitted.predict(row) == fitted.predict({**row, "vote_share": mean_share})
    assert fitted.predict(row) == fitted.predict({**row, "samples": 5.0})  # never read

    earlier = fit_calibrator(rows, labels, source="bench", ignore=(), structural=())
    assert earlier.feature_names == ["samples", "vote_share", "x"]
    assert earlier.missing_indicators == ["vote_share"]
    assert earlier.predict(row) != earlier.predict({**row, "samples": 5.0})


def run(n: int, seed: int, kind: str) -> tuple[Rows, list[bool]]:
    """Answers of one bench run: P(correct) = sigmoid(2 x + 1) for "vote" (5 samples and a
    vote share) and "greedy" (1 sample) runs; an "unanswerable" run is greedy and all wrong."""
    rng = np.random.default_rng(seed)
    rows: Rows = []
    labels: list[bool] = []
    for _ in range(n):
        x = float(rng.normal())
        p = 0.0 if kind == "unanswerable" else 1.0 / (1.0 + np.exp(-(2.0 * x + 1.0)))
        if kind == "unanswerable":
            x -= 1.0
        row = {"x": x, "samples": 5.0 if kind == "vote" else 1.0}
        if kind == "vote":
            row["vote_share"] = float(rng.uniform(0.4, 1.0))
        rows.append(row)
        labels.append(bool(rng.random() < p))
    return rows, labels


def test_fitted_on_other_runs_a_greedy_deployment_is_not_told_it_is_always_wrong() -> None:
    # fitted on a vote run and the unanswerable set, the earlier recipe learned that one
    # sample (and no vote share) means "wrong": it was the unanswerable run's mark
    vote, vote_labels = run(300, 1, "vote")
    unanswerable, none_right = run(150, 2, "unanswerable")
    greedy, greedy_labels = run(2000, 3, "greedy")
    rows, labels = vote + unanswerable, vote_labels + none_right
    recipe = fit_calibrator(rows, labels, source="bench")
    earlier = fit_calibrator(rows, labels, source="bench", ignore=(), structural=())
    accuracy = float(np.mean(greedy_labels))
    assert 0.6 < accuracy < 0.7
    assert float(np.mean(earlier.predict_many(greedy))) < 0.05
    assert abs(float(np.mean(recipe.predict_many(greedy))) - accuracy) < 0.2
    ours = auroc(recipe.predict_many(greedy), greedy_labels)
    assert ours is not None and ours > 0.75  # still ranks by x


def test_a_missing_feature_outside_the_structural_ones_keeps_its_indicator() -> None:
    rows, labels = confounded(400, seed=4)
    for i, row in enumerate(rows):
        row["empty_result"] = float(i % 7 == 0)
        if i % 5 == 0:
            del row["x"]
    fitted = fit_calibrator(rows, labels, source="bench")
    assert fitted.missing_indicators == ["x"]
    assert fitted.columns == ["empty_result", "vote_share", "x", "x_missing"]


def test_a_file_of_the_earlier_recipe_loads_and_reads_every_column_it_names(
    tmp_path: Path,
) -> None:
    # written by hand in the format-1 layout the earlier recipe saved (samples read, a
    # vote_share indicator): this code must keep predicting with it unchanged
    old = {
        "format": 1,
        "version": 3,
        "method": "logistic",
        "fitted_on": {"examples": 550, "positives": 344},
        "fitted_at": "2026-11-26T20:00:00+00:00",
        "source": "bench:geo+spider+spider_tts+unanswerable",
        "note": "logistic only: isotonic did not help",
        "feature_names": ["samples", "sql_logprob_min", "vote_share"],
        "impute": [1.5, -0.8, 0.7],
        "missing_indicators": ["vote_share"],
        "scaler_means": [1.5, -0.8, 0.7, 0.8],
        "scaler_scales": [1.2, 0.3, 0.1, 0.4],
        "coefficients": [0.3, 0.6, 0.2, -0.2],
        "intercept": 0.5,
        "C": 0.1,
        "isotonic": None,
    }
    path = tmp_path / "calibrator.json"
    path.write_text(json.dumps(old))
    loaded = Calibrator.load(path)
    assert loaded.columns == ["samples", "sql_logprob_min", "vote_share", "vote_share_missing"]
    row = {"samples": 1.0, "sql_logprob_min": -0.5}
    z = (
        0.3 * (1.0 - 1.5) / 1.2
        + 0.6 * (-0.5 + 0.8) / 0.3
        + 0.2 * 0.0  # vote_share imputed with its mean
        - 0.2 * (1.0 - 0.8) / 0.4
        + 0.5
    )
    assert abs(loaded.predict(row) - 1.0 / (1.0 + np.exp(-z))) < 1e-12
    assert loaded.predict(row) != loaded.predict({**row, "samples": 5.0})
    assert json.loads(loaded.to_json()) == old  # re-saved as it was read


def test_the_packaged_calibrator_follows_the_recipe() -> None:
    packaged = Calibrator.load(
        Path(__file__).parents[3] / "agents" / "confidence" / "default_calibrator.json"
    )
    assert packaged.method == "logistic"
    assert not set(packaged.feature_names) & IGNORED_FEATURES
    assert not set(packaged.missing_indicators) & STRUCTURAL_ABSENCE
