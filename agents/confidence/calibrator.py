"""The calibrator: a fitted model from an answer's signals to P(answer correct).

An answer's signals are a flat ``dict[str, float]`` of named features (any names; see
``agents.confidence.signals``). ``fit_calibrator`` turns verified answers (their signals and
whether they were correct) into a ``Calibrator``:

- each feature is standardised (training mean and standard deviation) and a logistic
  regression (L2, no class weights: the goal is calibrated probabilities, not balanced
  accuracy) is fitted; its strength ``C`` is the one of ``C_GRID`` with the lowest
  out-of-fold log loss (stratified k-fold);
- a missing feature (absent, None, non-finite or not a number) is imputed with its training
  mean, and every feature missing from at least one training row also gets a
  ``<name>_missing`` indicator column (1 when missing) so the model can learn what absence
  means. A feature that was never missing in training is only imputed; a feature unknown to
  the model is ignored. The scaler is fitted once on all rows before the folds that choose C
  (it uses no labels);
- with at least ``isotonic_min_examples`` examples, an isotonic regression over the logistic
  output is considered: fitted on out-of-fold logistic predictions, it is kept only when it
  lowers the expected calibration error on held-out folds (and does not worsen the Brier
  score); ``isotonic`` is then set and ``note`` says so;
- with too little data (fewer than ``min_examples`` rows, or fewer than ``min_per_class`` of
  either class) the result is the hand-set prior (``agents.confidence.prior``), method
  "prior", with the reason in ``note``.

A calibrator is stored as plain JSON (never pickle): coefficients, intercept, scaler means
and scales, imputation values and the isotonic map. ``save`` writes beside the file and
renames over it; ``load`` raises ``CalibratorLoadError`` naming the file when it is
unreadable, malformed or of a newer format.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np

from agents.confidence.metrics import brier, expected_calibration_error
from agents.confidence.prior import PRIOR_VERSION, prior_features, prior_probability

log = logging.getLogger(__name__)

FORMAT_VERSION = 1  # of the JSON file; a newer one is refused, never guessed at
C_GRID: tuple[float, ...] = (0.01, 0.1, 1.0, 10.0)
FOLDS = 5
MISSING_SUFFIX = "_missing"

Method = Literal["logistic", "prior"]


class CalibratorLoadError(ValueError):
    """A calibrator file that cannot be read: unreadable, malformed or of a newer format."""


@dataclass(frozen=True)
class FittedOn:
    """How many verified answers a calibrator was fitted on, and how many were correct."""

    examples: int
    positives: int


@dataclass(frozen=True)
class IsotonicMap:
    """A monotone map applied to the logistic output: linear interpolation through the
    points (x, y), clipped to the end values outside them."""

    x: list[float]
    y: list[float]

    def apply(self, p: float) -> float:
        return float(np.interp(p, self.x, self.y))


@dataclass
class Calibrator:
    """A fitted model from an answer's signals to P(correct) (see the module docstring).

    Attributes:
        version: increases by one with each refit (1 for the first).
        method: "logistic" (fitted) or "prior" (the hand-set prior).
        fitted_on: the number of examples and of correct ones it was fitted on.
        fitted_at: when it was fitted (ISO 8601, UTC).
        source: where the examples came from, free text ("deployment",
            "bench:spider_dev+geoquery").
        note: why the prior was used, or whether the isotonic step was kept.
        feature_names: the features the model reads.
        impute: the value used for each feature when it is missing (its training mean).
        missing_indicators: the features that also have a ``<name>_missing`` column.
        scaler_means, scaler_scales: standardisation of each column (features, then
            indicators).
        coefficients, intercept: the logistic model over the standardised columns.
        C: the inverse regularisation strength chosen (None for the prior).
        isotonic: the isotonic map over the logistic output, when it was kept.
    """

    version: int
    method: Method
    fitted_on: FittedOn
    fitted_at: str
    source: str
    note: str = ""
    feature_names: list[str] = field(default_factory=list)
    impute: list[float] = field(default_factory=list)
    missing_indicators: list[str] = field(default_factory=list)
    scaler_means: list[float] = field(default_factory=list)
    scaler_scales: list[float] = field(default_factory=list)
    coefficients: list[float] = field(default_factory=list)
    intercept: float = 0.0
    C: float | None = None
    isotonic: IsotonicMap | None = None

    @property
    def columns(self) -> list[str]:
        """The model's input columns: the features, then their missing indicators."""
        return self.feature_names + [name + MISSING_SUFFIX for name in self.missing_indicators]

    def predict(self, features: Mapping[str, float]) -> float:
        """P(the answer with these signals is correct), in [0, 1]."""
        if self.method == "prior":
            return prior_probability(features)
        x = _matrix([features], self.feature_names, self.impute, self.missing_indicators)[0]
        z = float(
            ((x - np.asarray(self.scaler_means)) / np.asarray(self.scaler_scales))
            @ np.asarray(self.coefficients)
            + self.intercept
        )
        p = 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0
        if self.isotonic is not None:
            p = self.isotonic.apply(p)
        return min(max(p, 0.0), 1.0)

    def predict_many(self, rows: Sequence[Mapping[str, float]]) -> list[float]:
        """``predict`` of each row."""
        return [self.predict(row) for row in rows]

    def to_json(self) -> str:
        """The calibrator as plain JSON (with the file format version)."""
        data: dict[str, Any] = {"format": FORMAT_VERSION, **asdict(self)}
        if self.method == "prior":
            data["prior_version"] = PRIOR_VERSION
        return json.dumps(data, indent=1)

    @classmethod
    def from_json(cls, text: str) -> Calibrator:
        """The calibrator ``to_json`` wrote; ``ValueError`` when the text is not one or is
        of a newer format."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise ValueError(f"not a calibrator: a JSON {type(data).__name__}")
        fmt = data.pop("format", None)
        if not isinstance(fmt, int):
            raise ValueError(f"no format version (got {fmt!r})")
        if fmt > FORMAT_VERSION:
            raise ValueError(f"format {fmt} is newer than this code reads ({FORMAT_VERSION})")
        data.pop("prior_version", None)  # the prior itself is code: the current one is used
        try:
            fitted_on = FittedOn(**data.pop("fitted_on"))
            isotonic = data.pop("isotonic", None)
            calibrator = cls(
                fitted_on=fitted_on,
                isotonic=IsotonicMap(**isotonic) if isotonic is not None else None,
                **data,
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not a calibrator: {exc}") from exc
        calibrator._check()
        return calibrator

    def _check(self) -> None:
        if self.method not in ("logistic", "prior"):
            raise ValueError(f"unknown method {self.method!r}")
        if self.method == "logistic":
            n = len(self.columns)
            sizes = [len(self.scaler_means), len(self.scaler_scales), len(self.coefficients)]
            if len(self.impute) != len(self.feature_names) or sizes != [n, n, n]:
                raise ValueError(
                    f"inconsistent sizes: {len(self.feature_names)} features, "
                    f"{len(self.impute)} imputation values, {n} columns, "
                    f"scaler/coefficients {sizes}"
                )
            numbers = [*self.impute, *self.scaler_means, *self.scaler_scales, *self.coefficients]
            if not all(isinstance(v, int | float) and math.isfinite(v) for v in numbers):
                raise ValueError("a coefficient, scaler or imputation value is not a number")

    def save(self, path: Path) -> None:
        """Write the JSON to ``path`` atomically (beside it, then renamed over it)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.partial")
        try:
            partial.write_text(self.to_json(), encoding="utf-8")
            os.replace(partial, path)
        except OSError:
            partial.unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: Path) -> Calibrator:
        """The calibrator saved at ``path``; ``CalibratorLoadError`` naming the file when it
        cannot be read, is malformed or is of a newer format."""
        try:
            text = Path(path).read_text(encoding="utf-8")
            return cls.from_json(text)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise CalibratorLoadError(f"cannot load calibrator {path}: {exc}") from exc


def prior_calibrator(
    *, source: str = "prior", version: int = 1, note: str = "", fitted_on: FittedOn | None = None
) -> Calibrator:
    """The hand-set prior as a calibrator: what an install uses before it has data."""
    return Calibrator(
        version=version,
        method="prior",
        fitted_on=fitted_on or FittedOn(0, 0),
        fitted_at=_now(),
        source=source,
        note=note or "the hand-set prior: no verified answers yet",
        feature_names=prior_features(),
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
) -> Calibrator:
    """Fit a calibrator on verified answers: ``rows[i]`` the signals of answer i,
    ``labels[i]`` whether it was correct (see the module docstring). Its version is
    ``previous.version + 1`` (1 without a previous one). Too little data gives the prior,
    with the reason in ``note``; ``isotonic_min_examples=None`` never considers the
    isotonic step."""
    if len(rows) != len(labels):
        raise ValueError(f"{len(rows)} rows but {len(labels)} labels")
    y = np.asarray([bool(label) for label in labels], dtype=bool)
    version = previous.version + 1 if previous is not None else 1
    fitted_on = FittedOn(int(y.size), int(y.sum()))
    names = sorted({name for row in rows for name, value in row.items() if _finite(value)})
    short = _shortage(fitted_on, names, min_examples, min_per_class)
    if short:
        log.info("calibrator v%d: the prior (%s)", version, short)
        return prior_calibrator(source=source, version=version, note=short, fitted_on=fitted_on)

    raw = _matrix(rows, names, [math.nan] * len(names), [])
    impute = [float(np.nanmean(raw[:, j])) for j in range(len(names))]
    indicators = [name for j, name in enumerate(names) if np.isnan(raw[:, j]).any()]
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


def _finite(value: object) -> bool:
    try:
        return value is not None and math.isfinite(float(value))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def _matrix(
    rows: Sequence[Mapping[str, float]],
    names: Sequence[str],
    impute: Sequence[float],
    indicators: Sequence[str],
) -> np.ndarray:
    """One row per answer: each feature (imputed when missing), then the indicators."""
    out = np.empty((len(rows), len(names) + len(indicators)))
    for i, row in enumerate(rows):
        missing = set()
        for j, name in enumerate(names):
            value = row.get(name)
            if _finite(value):
                out[i, j] = float(value)  # type: ignore[arg-type]
            else:
                out[i, j] = impute[j]
                missing.add(name)
        for k, name in enumerate(indicators):
            out[i, len(names) + k] = 1.0 if name in missing else 0.0
    return out


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


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
