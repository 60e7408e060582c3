"""Out-of-sample confidence for the calibration report: every answer's P(correct) comes from
a calibrator that never saw it.

- :func:`leave_one_out`: each set predicted by a calibrator fitted on the other sets only;
- :func:`cross_fitted`: each set split into ``folds`` stratified folds, each fold predicted by
  a calibrator fitted on the other sets and the set's other folds.

Two sets may hold answers to the same questions (a greedy run and a vote on one sample): an
answer to a question being predicted is never fitted on, from whichever set it comes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np

from agents.confidence.calibrator import fit_calibrator


class Answer(Protocol):
    id: str  # the question's
    features: dict[str, float]
    correct: bool


def leave_one_out(sets: Mapping[str, Sequence[Answer]]) -> dict[str, list[float]]:
    """P(correct) of each answer, fitted on the other sets' answers to other questions."""
    predicted: dict[str, list[float]] = {}
    for name, found in sets.items():
        asked = {a.id for a in found}
        train = [
            a for other, answers in sets.items() if other != name for a in answers
            if a.id not in asked
        ]  # fmt: skip
        calibrator = fit_calibrator(
            [a.features for a in train], [a.correct for a in train], source="others"
        )
        predicted[name] = calibrator.predict_many([a.features for a in found])
    return predicted


def cross_fitted(
    sets: Mapping[str, Sequence[Answer]], *, folds: int = 5, seed: int = 0
) -> dict[str, list[float]]:
    """P(correct) of each answer, fitted on its set's other folds and the other sets'
    answers to questions outside its fold."""
    predicted: dict[str, list[float]] = {}
    for name, found in sets.items():
        others = [a for other, answers in sets.items() if other != name for a in answers]
        assignment = _stratified_folds([a.correct for a in found], folds, seed)
        probs = [0.0] * len(found)
        for fold in range(folds):
            held = [i for i, f in enumerate(assignment) if f == fold]
            if not held:
                continue
            held_ids = {found[i].id for i in held}
            train = [a for a in others if a.id not in held_ids]
            train += [a for i, a in enumerate(found) if assignment[i] != fold]
            calibrator = fit_calibrator(
                [a.features for a in train], [a.correct for a in train], source="pooled"
            )
            for i in held:
                probs[i] = calibrator.predict(found[i].features)
        predicted[name] = probs
    return predicted


def _stratified_folds(labels: Sequence[bool], folds: int, seed: int) -> list[int]:
    """A fold number per answer, each class spread evenly over the folds."""
    rng = np.random.default_rng(seed)
    assignment = [0] * len(labels)
    for value in (True, False):
        members = [i for i, label in enumerate(labels) if label == value]
        rng.shuffle(members)
        for position, i in enumerate(members):
            assignment[i] = position % folds
    return assignment
