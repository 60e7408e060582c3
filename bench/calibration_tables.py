"""The calibration report's tables: how good each set's confidence is (AUROC, ECE, Brier)
and what abstaining at each threshold would cost (:mod:`bench.calibration`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from agents.confidence.calibrator import Calibrator
from agents.confidence.metrics import auroc, brier, expected_calibration_error, sampling_ece
from agents.confidence.recorded_answers import UNANSWERABLE
from bench.calibration_folds import cross_fitted, leave_one_out

THRESHOLDS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6)


@dataclass
class Scored:
    """One answer of a set: its signals, whether it was right, what it cost."""

    set_name: str
    id: str
    features: dict[str, float]
    correct: bool
    confidence: float | None
    seconds: float


def quality_table(sets: dict[str, list[Scored]], given: Calibrator | None = None) -> str:
    """AUROC, ECE (and Brier) per set of the recorded, other-sets and pooled confidences;
    then every set together (the unanswerable questions among the wrong answers). The last
    column is the ECE that the pooled confidences would show on a set this size if they were
    perfectly calibrated (:func:`agents.confidence.metrics.sampling_ece`): ECE's floor.
    With a ``given`` calibrator (one fitted before, e.g. a candidate default on answers it
    never saw) its AUROC and ECE follow the recorded ones."""
    given_head = "given AUROC | given ECE | " if given is not None else ""
    out = [
        f"| set | answers | correct | recorded AUROC | recorded ECE | {given_head}"
        "other sets AUROC | other sets ECE | pooled 5-fold AUROC | pooled 5-fold ECE | "
        "pooled Brier | pooled ECE if calibrated |",
        "|---|---:|---:|" + "---:|" * (8 + (2 if given is not None else 0)),
    ]
    others = leave_one_out(sets)
    folds = cross_fitted(sets)
    rows = [(name, found, others[name], folds[name]) for name, found in sets.items()]
    if len(sets) > 1:
        rows.append(
            (
                "all sets",
                [s for found in sets.values() for s in found],
                [p for name in sets for p in others[name]],
                [p for name in sets for p in folds[name]],
            )
        )
    for name, found, other, pooled in rows:
        labels = [s.correct for s in found]
        recorded = [_recorded(s) for s in found]
        cells = [name, str(len(found)), f"{np.mean(labels):.3f}" if found else "-"]
        confidences = [recorded, other, pooled]
        if given is not None:
            confidences.insert(1, given.predict_many([s.features for s in found]))
        for probs in confidences:
            cells += [_fmt(auroc(probs, labels)), _fmt(expected_calibration_error(probs, labels))]
        cells += [_fmt(brier(pooled, labels)), _fmt(sampling_ece(pooled))]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def abstention_table(
    sets: dict[str, list[Scored]], fit: str, given: Calibrator | None = None
) -> str:
    """Abstention by threshold: unanswerable questions abstained on, and the correct answers
    of each answerable set abstained on (the cost). ``fit``: whose confidence (``recorded``,
    ``given``: the ``given`` calibrator's, ``other-sets``, ``pooled``)."""
    if fit == "recorded":  # what the answers said: the calibrator they ran with
        probs = {name: [_recorded(s) for s in found] for name, found in sets.items()}
    elif fit == "given":
        if given is None:
            raise ValueError("--abstain-fit given needs --calibrator FILE")
        probs = {name: given.predict_many([s.features for s in f]) for name, f in sets.items()}
    else:
        probs = leave_one_out(sets) if fit == "other-sets" else cross_fitted(sets)
    names = [n for n in sets if n != UNANSWERABLE]
    head = "| threshold | unanswerable abstained | " + " | ".join(
        f"{n}: correct abstained | {n}: wrong abstained" for n in names
    )
    out = [head + " |", "|---:" * (2 + 2 * len(names)) + "|"]
    for threshold in THRESHOLDS:
        cells = [f"{threshold:.1f}"]
        if UNANSWERABLE in sets:
            cells.append(_share([p < threshold for p in probs[UNANSWERABLE]]))
        else:
            cells.append("-")
        for name in names:
            found = sets[name]
            right = [p < threshold for p, s in zip(probs[name], found, strict=True) if s.correct]
            wrong = [
                p < threshold for p, s in zip(probs[name], found, strict=True) if not s.correct
            ]
            cells += [_share(right), _share(wrong)]
        out.append("| " + " | ".join(cells) + " |")
    return f"abstention ({fit} calibrator):\n" + "\n".join(out)


def _recorded(answer: Scored) -> float:
    """The confidence an answer was given when it ran (0.5 for a run that recorded none)."""
    return answer.confidence if answer.confidence is not None else 0.5


def _fmt(value: float | None) -> str:
    return "-" if value is None or value != value else f"{value:.3f}"


def _share(flags: Sequence[bool]) -> str:
    return f"{np.mean(flags):.3f} ({sum(flags)}/{len(flags)})" if flags else "-"
