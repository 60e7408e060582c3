"""What a deployment's ``calibrate`` job gains from its own verdicts, with and without the
packaged answers beside them.

One set plays the deployment (its recorded answers stand for the answers people judge);
the other sets are what ships with Almanac. For each number of verdicts ``k``, ``--draws``
times: ``k`` of the deployment's answers are drawn as its verdicts, the rest are the answers
still to come, and three calibrators are measured on those (AUROC, ECE, mean of the draws):

- **packaged**: fitted on the other sets alone (a fresh install);
- **deployment alone**: fitted on the ``k`` verdicts (``ALMANAC_CONFIDENCE__REFIT_WITH_PACKAGED
  =false``; under the refit's minimum of 40 verdicts, 8 of each, the packaged one stays);
- **pooled**: fitted on the other sets and the ``k`` verdicts together (the default).

A draw with fewer than 8 right or 8 wrong answers is drawn again (the refit would not run).

    python -m bench.refit_curve \\
        --deployment spider300=agents/confidence/recordings/spider300.jsonl.gz \\
        geo150=agents/confidence/recordings/geo150.jsonl.gz --sizes 40,80,160 --draws 20
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from agents.confidence.calibrator import Calibrator, fit_calibrator
from agents.confidence.metrics import auroc, expected_calibration_error
from agents.confidence.recorded_answers import RecordedAnswersError
from agents.confidence.refit import MIN_EXAMPLES, MIN_PER_CLASS
from bench.calibration import read_set, read_spec
from bench.calibration_tables import UNANSWERABLE, Scored

FITS = ("packaged", "deployment alone", "pooled")


@dataclass
class CurvePoint:
    """The mean AUROC and ECE of each fit over the draws at one number of verdicts."""

    verdicts: int
    draws: int
    auroc: dict[str, float]
    ece: dict[str, float]


def refit_curve(
    deployment: Sequence[Scored],
    packaged: Sequence[Scored],
    sizes: Sequence[int],
    draws: int,
    seed: int = 0,
    progress: bool = True,
) -> list[CurvePoint]:
    """The curve (see the module docstring)."""
    shipped = _fit([s.features for s in packaged], [s.correct for s in packaged])
    rng = np.random.default_rng(seed)
    labels = np.asarray([s.correct for s in deployment])
    points = []
    total = len(sizes) * draws
    with tqdm(total=total, desc="refit draws", disable=not progress) as bar:
        for k in sizes:
            if k >= len(deployment) or k < 1:
                raise ValueError(f"{k} verdicts out of a deployment of {len(deployment)} answers")
            scores: dict[str, list[tuple[float, float]]] = {fit: [] for fit in FITS}
            for _ in range(draws):
                judged = _draw(labels, k, rng)
                rest = np.setdiff1d(np.arange(len(deployment)), judged)
                seen = [deployment[i] for i in judged]
                alone = pooled = shipped  # under the refit's minimum nothing is refitted
                if k >= MIN_EXAMPLES:
                    alone = _fit([s.features for s in seen], [s.correct for s in seen])
                    both = [*packaged, *seen]
                    pooled = _fit([s.features for s in both], [s.correct for s in both])
                test = [deployment[i] for i in rest]
                for name, model in zip(FITS, (shipped, alone, pooled), strict=True):
                    scores[name].append(_measure(model, test))
                bar.update(1)
            points.append(
                CurvePoint(
                    k,
                    draws,
                    {n: float(np.mean([a for a, _ in v])) for n, v in scores.items()},
                    {n: float(np.mean([e for _, e in v])) for n, v in scores.items()},
                )
            )
    return points


def render(points: Sequence[CurvePoint], deployment: str, packaged: Sequence[str]) -> str:
    head = " | ".join(f"{fit} AUROC / ECE" for fit in FITS)
    lines = [
        f"deployment: {deployment}; packaged: {', '.join(packaged)}",
        "",
        f"| verdicts | draws | {head} |",
        "|---:|---:|" + "---:|" * len(FITS),
    ]
    for p in points:
        cells = " | ".join(f"{p.auroc[f]:.3f} / {p.ece[f]:.3f}" for f in FITS)
        lines.append(f"| {p.verdicts} | {p.draws} | {cells} |")
    return "\n".join(lines)


def _draw(labels: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` indices with at least MIN_PER_CLASS of each verdict (when the set has them)."""
    need = min(MIN_PER_CLASS, int(labels.sum()), int((~labels).sum()))
    for _ in range(1000):
        chosen = rng.choice(labels.size, size=k, replace=False)
        right = int(labels[chosen].sum())
        if min(right, k - right) >= need:
            return chosen
    raise ValueError(f"no draw of {k} holds {need} right and {need} wrong answers")


def _fit(rows: list[dict[str, float]], labels: list[bool]) -> Calibrator:
    return fit_calibrator(
        rows, labels, source="curve", min_examples=MIN_EXAMPLES, min_per_class=MIN_PER_CLASS
    )


def _measure(model: Calibrator, test: Sequence[Scored]) -> tuple[float, float]:
    probs = model.predict_many([s.features for s in test])
    labels = [s.correct for s in test]
    return auroc(probs, labels) or 0.5, expected_calibration_error(probs, labels)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.refit_curve",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--deployment", required=True, help="NAME=RUN|RECORDING: its verdicts")
    parser.add_argument("packaged", nargs="+", help="NAME=RUN|RECORDING: the shipped sets")
    parser.add_argument("--unanswerable", type=Path, help="shipped too (folder or recording)")
    parser.add_argument("--sizes", default="40,80,160", help="numbers of verdicts")
    parser.add_argument("--draws", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="also write the table here (markdown)")
    args = parser.parse_args(argv)
    try:
        name, _, deployment = read_spec(args.deployment)
        shipped: list[Scored] = []
        names = []
        for spec in args.packaged:
            other, _, found = read_spec(spec)
            shipped += found
            names.append(other)
        if args.unanswerable:
            shipped += read_set(UNANSWERABLE, args.unanswerable)
            names.append(UNANSWERABLE)
        sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
        points = refit_curve(deployment, shipped, sizes, args.draws, args.seed)
    except (ValueError, FileNotFoundError, RecordedAnswersError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text = render(points, name, names)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
