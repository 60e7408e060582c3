"""How good a confidence is: ranking (AUROC), calibration (ECE, reliability table) and Brier.

Every function takes parallel sequences of predicted probabilities of being correct (or, for
AUROC, any scores where higher means "more likely correct") and the true labels (True =
correct). Inputs of different lengths, empty inputs and probabilities outside [0, 1] raise
``ValueError`` naming the offending value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ReliabilityBin:
    """One equal-width confidence bin of a reliability table.

    Attributes:
        lower, upper: the bin's edges; a bin holds ``lower <= p < upper`` (the last one also
            holds ``p == 1``).
        count: answers whose confidence falls in the bin.
        mean_confidence: their mean predicted probability (None when the bin is empty).
        accuracy: the share of them that were correct (None when the bin is empty).
    """

    lower: float
    upper: float
    count: int
    mean_confidence: float | None
    accuracy: float | None


def _arrays(probs: Sequence[float], labels: Sequence[bool]) -> tuple[np.ndarray, np.ndarray]:
    if len(probs) != len(labels):
        raise ValueError(f"{len(probs)} probabilities but {len(labels)} labels")
    if len(probs) == 0:
        raise ValueError("no probabilities given")
    p = np.asarray(probs, dtype=float)
    bad = ~np.isfinite(p) | (p < 0.0) | (p > 1.0)
    if bad.any():
        index = int(np.flatnonzero(bad)[0])
        raise ValueError(f"probability {p[index]!r} at index {index} is not in [0, 1]")
    return p, np.asarray(labels, dtype=bool)


def _bin_index(p: np.ndarray, bins: int) -> np.ndarray:
    if bins < 1:
        raise ValueError(f"bins must be at least 1, got {bins}")
    return np.minimum((p * bins).astype(int), bins - 1)


def auroc(scores: Sequence[float], labels: Sequence[bool]) -> float | None:
    """Area under the ROC curve: the probability that a random correct answer scores higher
    than a random wrong one (ties count half), via ``sklearn.metrics.roc_auc_score``.

    1.0 is a perfect ranking, 0.5 chance, 0.0 a perfectly reversed one. Returns None when the
    labels hold only one class (the area is undefined: there is no pair to rank).
    """
    if len(scores) != len(labels):
        raise ValueError(f"{len(scores)} scores but {len(labels)} labels")
    y = np.asarray(labels, dtype=bool)
    if y.size == 0 or y.all() or not y.any():
        return None
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, np.asarray(scores, dtype=float)))


def reliability_table(
    probs: Sequence[float], labels: Sequence[bool], bins: int = 10
) -> list[ReliabilityBin]:
    """The ``bins`` equal-width bins over [0, 1], each with its count, mean confidence and
    accuracy (empty bins included, with None for the means)."""
    p, y = _arrays(probs, labels)
    index = _bin_index(p, bins)
    table = []
    for b in range(bins):
        members = index == b
        count = int(members.sum())
        table.append(
            ReliabilityBin(
                lower=b / bins,
                upper=(b + 1) / bins,
                count=count,
                mean_confidence=float(p[members].mean()) if count else None,
                accuracy=float(y[members].mean()) if count else None,
            )
        )
    return table


def expected_calibration_error(
    probs: Sequence[float], labels: Sequence[bool], bins: int = 10
) -> float:
    """The standard expected calibration error over ``bins`` equal-width bins:

        ECE = sum_b (n_b / N) * |accuracy_b - mean_confidence_b|

    where n_b is the number of answers in bin b and N the total (empty bins weigh nothing).
    0 is perfectly calibrated; an answer set said to be 90 % sure and right half the time
    has ECE 0.4.
    """
    total = 0
    error = 0.0
    for row in reliability_table(probs, labels, bins):
        if row.count and row.accuracy is not None and row.mean_confidence is not None:
            error += row.count * abs(row.accuracy - row.mean_confidence)
            total += row.count
    return error / total


def sampling_ece(probs: Sequence[float], bins: int = 10, draws: int = 500, seed: int = 0) -> float:
    """The ECE a *perfectly calibrated* confidence with these values still shows on a set of
    this size: the mean ECE over ``draws`` label sets drawn with P(correct) = p for each
    answer. ECE's bins are estimated from few answers, so it is biased upwards on small sets
    (60 answers over 10 bins: several hundredths); an ECE near this floor is as calibrated as
    the set can show.
    """
    p = np.asarray(list(probs), dtype=float)
    if p.size == 0:
        raise ValueError("no probabilities")
    if np.any((p < 0) | (p > 1)):
        raise ValueError(f"probabilities outside [0, 1]: {p[(p < 0) | (p > 1)][:3].tolist()}")
    rng = np.random.default_rng(seed)
    drawn = rng.random((draws, p.size)) < p
    return float(np.mean([expected_calibration_error(p, labels, bins) for labels in drawn]))


def brier(probs: Sequence[float], labels: Sequence[bool]) -> float:
    """The Brier score, the mean squared error of the probabilities:

        Brier = (1 / N) * sum_i (p_i - y_i)^2,   y_i = 1 when answer i was correct, else 0

    0 is perfect; always saying 0.5 scores 0.25.
    """
    p, y = _arrays(probs, labels)
    return float(np.mean((p - y.astype(float)) ** 2))
