"""Fitting the calibrator: verified answers (their signals and whether they were correct) to
a :class:`~agents.confidence.calibrator_model.Calibrator` (what one is and how it is stored
is :mod:`agents.confidence.calibrator_model`; its names are re-exported here).

``fit_calibrator``:

- reads every feature of the rows except ``IGNORED_FEATURES``: ``samples`` and
  ``distinct_results`` say how many samples the system chose to draw (one greedy answer, a
  vote of five, an adaptive loop) more than how good the answer is; ``vote_share`` carries
  the agreement. Fitted on bench runs of different systems they taught the model which run
  an answer came from; and the adaptive loop draws more samples *because* the confidence
  was low, so a model reading ``samples`` would lower the confidence for having drawn them
  and draw more still;
- standardises each feature (training mean and standard deviation) and fits a logistic
  regression (L2, no class weights: the goal is calibrated probabilities, not balanced
  accuracy); its strength ``C`` is the one of ``C_GRID`` with the lowest out-of-fold log
  loss (stratified k-fold);
- imputes a missing feature (absent, None, non-finite or not a number) with its training
  mean; a feature missing from at least one training row also gets a ``<name>_missing``
  indicator column (1 when missing), so the model can learn what absence means, unless it is
  one of ``STRUCTURAL_ABSENCE``: features whose absence says what the deployment or system
  has (no labeled experience to show, one sample so no vote, a server without token log
  probabilities) rather than anything about the answer. Their indicators, fitted on several
  bench sets, learned which set an answer came from, not whether it was right (a SQL that
  was never produced is ``no_result``, so the SQL features need no indicator of their own
  either). With both, a calibrator fitted on the other bench sets gave the Spider greedy
  answers a mean confidence of 0.40 for an accuracy of 0.68. A feature unknown to the model
  is ignored. The scaler is fitted once on all rows
  before the folds that choose C (it uses no labels);
- with at least ``isotonic_min_examples`` examples, considers an isotonic regression over
  the logistic output: fitted on out-of-fold logistic predictions, it is kept only when it
  lowers the expected calibration error on held-out folds (and does not worsen the Brier
  score); ``isotonic`` is then set and ``note`` says so;
- with too little data (fewer than ``min_examples`` rows, or fewer than ``min_per_class`` of
  either class) returns the hand-set prior (``agents.confidence.prior``), method "prior",
  with the reason in ``note``.

The recipe was chosen on the recorded bench runs (Spider 300, GeoQuery 150 greedy, a Spider
vote of five, the unanswerable set) by AUROC and ECE of sets the fit never saw
(``python -m bench.calibration report``); a gradient-boosted tree model, logprob transforms
and interaction terms did not rank answers better there and are not used.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

from agents.confidence.calibrator_model import (
    FORMAT_VERSION,
    MISSING_SUFFIX,
    Calibrator,
    CalibratorLoadError,
    FittedOn,
    IsotonicMap,
    Method,
    _finite,
    _matrix,
    _now,
    prior_calibrator,
)
from agents.confidence.metrics import brier, expected_calibration_error

__all__ = [
    "C_GRID",
    "FOLDS",
    "FORMAT_VERSION",
    "IGNORED_FEATURES",
    "MISSING_SUFFIX",
    "STRUCTURAL_ABSENCE",
    "Calibrator",
    "CalibratorLoadError",
    "FittedOn",
    "IsotonicMap",
    "Method",
    "fit_calibrator",
    "prior_calibrator",
]

log = logging.getLogger(__name__)

C_GRID: tuple[float, ...] = (0.01, 0.1, 1.0, 10.0)
FOLDS = 5
IGNORED_FEATURES: frozenset[str] = frozenset({"samples", "distinct_results"})
STRUCTURAL_ABSENCE: frozenset[str] = frozenset(
    {
        "nearest_example_similarity",
        "same_skeleton_example",
        "vote_share",
        "logprob_mean",
        "logprob_min",
        "sql_logprob_mean",
        "sql_logprob_min",
        "sql_tables",
        "sql_nesting",
        "sql_set_ops",
        "sql_conditions",
        "sql_aggregates",
        "sql_clauses",
        "sql_length",
        "linked_filters",
        "linked_filters_unused",
        "projection_echoes_filter",
        "attribute_via_reference",
    }
)


def fit_calibrator(
    rows: Sequence[Mapping[str, float]],
    labels: Sequence[bool],
    *,
    previous: Calibrator | None = None,
    source: str,
    min_examples: int = 40,
    min_per_class: int = 8,
    isotonic_min_examples: int | None = 200,
    seed: int = 0,
    ignore: Collection[str] = IGNORED_FEATURES,
    structural: Collection[str] = STRUCTURAL_ABSENCE,
) -> Calibrator:
    """Fit a calibrator on verified answers: ``rows[i]`` the signals of answer i,
    ``labels[i]`` whether it was correct (see the module docstring). Its version is
    ``previous.version + 1`` (1 without a previous one). Too little data gives the prior,
    with the reason in ``note``; ``isotonic_min_examples=None`` never considers the
    isotonic step. ``ignore`` are features never read, ``structural`` those missing without
    an indicator (the defaults are the recipe above; empty collections read every feature
    and give every missing one an indicator)."""
    if len(rows) != len(labels):
        raise ValueError(f"{len(rows)} rows but {len(labels)} labels")
    y = np.asarray([bool(label) for label in labels], dtype=bool)
    version = previous.version + 1 if previous is not None else 1
    fitted_on = FittedOn(int(y.size), int(y.sum()))
    names = sorted(
        {n for row in rows for n, value in row.items() if n not in ignore and _finite(value)}
    )
    short = _shortage(fitted_on, names, min_examples, min_per_class)
    if short:
        log.info("calibrator v%d: the prior (%s)", version, short)
        return prior_calibrator(source=source, version=version, note=short, fitted_on=fitted_on)

    raw = _matrix(rows, names, [math.nan] * len(names), [])
    impute = [float(np.nanmean(raw[:, j])) for j in range(len(names))]
    indicators = [
        name for j, name in enumerate(names) if name not in structural and np.isnan(raw[:, j]).any()
    ]
    clash = set(names) & {name + MISSING_SUFFIX for name in indicators}
    if clash:
        raise ValueError(f"features {sorted(clash)} clash with missing-value indicators")
    x = _matrix(rows, names, impute, indicators)
    means = x.mean(axis=0)
    scales = x.std(axis=0)
    scales[scales == 0] = 1.0
    xs = (x - means) / scales

    folds = _folds(y, seed)
    c, oof = _choose_c(xs, y, folds)
    model = _logistic(c).fit(xs, y)
    calibrator = Calibrator(
        version=version,
        method="logistic",
        fitted_on=fitted_on,
        fitted_at=_now(),
        source=source,
        feature_names=names,
        impute=impute,
        missing_indicators=indicators,
        scaler_means=means.tolist(),
        scaler_scales=scales.tolist(),
        coefficients=model.coef_[0].tolist(),
        intercept=float(model.intercept_[0]),
        C=c,
    )
    if isotonic_min_examples is not None and y.size >= isotonic_min_examples:
        calibrator.isotonic, calibrator.note = _isotonic_step(oof, y, folds)
    else:
        calibrator.note = f"logistic only: isotonic needs {isotonic_min_examples} examples"
    log.info("calibrator v%d: logistic, C=%s, %s; %s", version, c, fitted_on, calibrator.note)
    return calibrator


def _shortage(fitted_on: FittedOn, names: list[str], min_examples: int, per_class: int) -> str:
    n, positives = fitted_on.examples, fitted_on.positives
    per_class = max(per_class, 2)  # the folds that choose C need two of each
    if n < min_examples:
        return f"{n} verified answers, fewer than the {min_examples} needed to fit"
    if min(positives, n - positives) < per_class:
        return (
            f"{positives} correct and {n - positives} wrong answers: "
            f"fewer than {per_class} of each needed to fit"
        )
    if not names:
        return f"{n} verified answers but no features to fit on"
    return ""


def _logistic(c: float) -> Any:
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=c, max_iter=1000)


def _folds(y: np.ndarray, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    from sklearn.model_selection import StratifiedKFold

    k = min(FOLDS, int(y.sum()), int((~y).sum()))
    return list(StratifiedKFold(n_splits=k, shuffle=True, random_state=seed).split(y, y))


def _choose_c(
    xs: np.ndarray, y: np.ndarray, folds: list[tuple[np.ndarray, np.ndarray]]
) -> tuple[float, np.ndarray]:
    """The C of ``C_GRID`` with the lowest out-of-fold log loss, and its out-of-fold
    probabilities (ties go to the stronger regularisation)."""
    best: tuple[float, float, np.ndarray] | None = None
    for c in C_GRID:
        oof = np.empty(y.size)
        for train, test in folds:
            oof[test] = _logistic(c).fit(xs[train], y[train]).predict_proba(xs[test])[:, 1]
        clipped = np.clip(oof, 1e-12, 1 - 1e-12)
        loss = float(-np.mean(y * np.log(clipped) + (~y) * np.log(1 - clipped)))
        if best is None or loss < best[1]:
            best = (c, loss, oof)
    assert best is not None
    return best[0], best[2]


def _isotonic_step(
    oof: np.ndarray, y: np.ndarray, folds: list[tuple[np.ndarray, np.ndarray]]
) -> tuple[IsotonicMap | None, str]:
    """The isotonic map over the out-of-fold logistic probabilities, when it lowers the
    held-out ECE (each fold mapped by an isotonic fit on the others) without worsening the
    Brier score; else None. With the note saying which, and the figures."""
    from sklearn.isotonic import IsotonicRegression

    def isotonic(p: np.ndarray, labels: np.ndarray) -> Any:
        return IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(p, labels)

    mapped = np.empty(y.size)
    for train, test in folds:
        mapped[test] = isotonic(oof[train], y[train]).predict(oof[test])
    labels = y.tolist()
    plain_ece = expected_calibration_error(oof.tolist(), labels)
    iso_ece = expected_calibration_error(mapped.tolist(), labels)
    figures = f"held-out ECE {plain_ece:.4f} logistic, {iso_ece:.4f} with isotonic"
    kept = iso_ece < plain_ece and brier(mapped.tolist(), labels) <= brier(oof.tolist(), labels)
    if not kept:
        return None, f"logistic only: isotonic did not help ({figures})"
    fitted = isotonic(oof, y)
    points = IsotonicMap(fitted.X_thresholds_.tolist(), fitted.y_thresholds_.tolist())
    return points, f"logistic + isotonic ({figures})"
