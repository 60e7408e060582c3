"""What a fitted calibrator is, and how it is stored: the model from an answer's signals to
P(answer correct), its JSON file, and the hand-set prior as a calibrator.

``Calibrator.predict`` reads the signals (a flat ``dict[str, float]``): each feature the
model knows is standardised and weighed by a logistic model (a missing one, absent, None,
non-finite or not a number, is imputed with its training mean and, when the model has an
indicator for it, sets ``<name>_missing``); a feature unknown to the model is ignored; the
isotonic map, when kept, is applied to the logistic output. How it is fitted is
:mod:`agents.confidence.calibrator`.

A calibrator is stored as plain JSON (never pickle): coefficients, intercept, scaler means
and scales, imputation values and the isotonic map. ``save`` writes beside the file and
renames over it; ``load`` raises ``CalibratorLoadError`` naming the file when it is
unreadable, malformed or of a newer format.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np

from agents.confidence.prior import PRIOR_VERSION, prior_features, prior_probability

FORMAT_VERSION = 1  # of the JSON file; a newer one is refused, never guessed at
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
        recordings: the recorded answers it was fitted on, by file name
            (:mod:`agents.confidence.recorded_answers`; the packaged calibrator's lie
            beside it), empty when they were not kept.
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
    recordings: list[str] = field(default_factory=list)

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
        if not self.recordings:  # a file from before recordings were kept reads back as it was
            del data["recordings"]
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


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
