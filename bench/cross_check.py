"""Whether a second model's answer to the same question tells the first model's right answers
from its wrong ones: the cross-model check as a confidence signal, measured on recorded runs
before anything pays for it on every question.

Two ``bench run`` folders over the same questions (the same sampling flags), the run whose
answers are judged and a check run by another model (the 0.5B beside the 1.5B); for every
question both answered and the run scored, both SQL queries are executed on the question's
database and the answers *agree* when their results match (Spider's match: columns in any
order, rows as a bag). Printed: how often they agree, the run's accuracy when they agree and
when not, the AUROC of agreement alone and of the recorded confidence, and what a logistic
calibrator reading the recorded confidence's logit gains from agreement (repeated stratified
5-fold on these answers: AUROC and ECE of the held-out predictions), with each run's mean
latency (what the check costs)::

    python -m bench.cross_check --dataset spider_dev \\
        --run bench/out/s59-spider100-unseen-adaptive01 \\
        --check bench/out/s61-spider100-unseen-05b \\
        --run bench/out/s60-spider100b-unseen-adaptive01 \\
        --check bench/out/s61-spider100b-unseen-05b
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from tqdm import tqdm

from agents.confidence.metrics import auroc, expected_calibration_error
from bench.datasets.registry import load_dataset
from bench.metrics.exact import spider_execution_match
from bench.run import QuestionResult, run_results
from kb.target.database import Database

REPEATS = 5


@dataclass(frozen=True)
class CheckedAnswer:
    """One question both runs answered: the run's verdict and confidence, whether the two
    results matched, and each run's latency."""

    id: str
    right: bool
    confidence: float
    agrees: bool
    latency_s: float
    check_latency_s: float


def checked_answers(
    run: Sequence[QuestionResult], check: Sequence[QuestionResult], urls: dict[str, str]
) -> list[CheckedAnswer]:
    """The questions of ``run`` that were scored, carry a confidence and that ``check`` also
    answered, on a database of ``urls``; a query that fails or is missing agrees with nothing."""
    checked = {result.id: result for result in check}
    databases: dict[str, Database] = {}
    answers = []
    try:
        for row in tqdm(run, desc="cross-check", unit="answer"):
            other, confidence = checked.get(row.id), row.system_metadata.get("confidence")
            if (
                other is None
                or row.scores is None
                or confidence is None
                or row.database not in urls
            ):
                continue
            if row.database not in databases:
                databases[row.database] = Database(urls[row.database])
            database = databases[row.database]
            mine, theirs = (_rows(database, r.predicted_sql) for r in (row, other))
            agrees = mine is not None and theirs is not None
            agrees = agrees and spider_execution_match(theirs, mine, False)
            answers.append(
                CheckedAnswer(
                    id=row.id,
                    right=row.scores.get("ex", 0.0) >= 1.0,
                    confidence=float(confidence),
                    agrees=bool(agrees),
                    latency_s=row.latency_s,
                    check_latency_s=other.latency_s,
                )
            )
    finally:
        for database in databases.values():
            database.close()
    return answers


def _rows(database: Database, sql: str | None) -> list | None:
    if not sql:
        return None
    outcome = database.execute(sql)
    return outcome.rows if outcome.ok and not outcome.truncated else None


def figures(answers: Sequence[CheckedAnswer], seed: int = 0) -> dict[str, float | None]:
    """What the check tells (see the module docstring); None where a figure is undefined."""
    if not answers:
        raise ValueError("no question was answered and scored by both runs")
    right = np.array([a.right for a in answers])
    agrees = np.array([a.agrees for a in answers])
    confidence = np.array([a.confidence for a in answers])
    logit = np.log(np.clip(confidence, 1e-4, 1 - 1e-4) / np.clip(1 - confidence, 1e-4, 1))
    alone = _cross_fitted(logit[:, None], right, seed)
    both = _cross_fitted(np.c_[logit, agrees], right, seed)
    out: dict[str, float | None] = {
        "answers": float(len(answers)),
        "right": float(right.mean()),
        "agree": float(agrees.mean()),
        "right_when_agreeing": _mean(right[agrees]),
        "right_when_not": _mean(right[~agrees]),
        "auroc_agreement": auroc(agrees.astype(float).tolist(), right.tolist()),
        "auroc_recorded_confidence": auroc(confidence.tolist(), right.tolist()),
        "mean_latency_s": float(np.mean([a.latency_s for a in answers])),
        "mean_check_latency_s": float(np.mean([a.check_latency_s for a in answers])),
    }
    for name, predicted in (("confidence", alone), ("confidence_and_agreement", both)):
        usable = predicted is not None
        out[f"cv_auroc_{name}"] = auroc(predicted.tolist(), right.tolist()) if usable else None
        out[f"cv_ece_{name}"] = (
            expected_calibration_error(predicted.tolist(), right.tolist()) if usable else None
        )
    return out


def _mean(values: np.ndarray) -> float | None:
    return float(values.mean()) if values.size else None


def _cross_fitted(x: np.ndarray, y: np.ndarray, seed: int) -> np.ndarray | None:
    """Held-out P(right) of a logistic fit, averaged over ``REPEATS`` stratified 5-folds;
    None when a class has fewer than 5 answers."""
    if min(int(y.sum()), int((~y).sum())) < 5:
        return None
    predicted = np.zeros(y.size)
    for repeat in range(REPEATS):
        folds = StratifiedKFold(5, shuffle=True, random_state=seed + repeat)
        for train, test in folds.split(x, y):
            model = LogisticRegression(C=1.0).fit(x[train], y[train])
            predicted[test] += model.predict_proba(x[test])[:, 1] / REPEATS
    return predicted


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cross_check", description=__doc__)
    parser.add_argument("--dataset", required=True, help="the runs' dataset (name or path)")
    parser.add_argument(
        "--run", type=Path, action="append", required=True, help="a judged run (repeatable)"
    )
    parser.add_argument(
        "--check", type=Path, action="append", required=True,
        help="the other model's run of the same questions, one per --run",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if len(args.run) != len(args.check):
        runs, checks = len(args.run), len(args.check)
        print(f"{runs} --run but {checks} --check: give one each", file=sys.stderr)
        return 2
    try:
        urls = load_dataset(args.dataset).databases
        answers = [
            answer
            for run, check in zip(args.run, args.check, strict=True)
            for answer in checked_answers(run_results(run), run_results(check), urls)
        ]
        result = figures(answers)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for name, value in result.items():
        shown = "-" if value is None or math.isnan(value) else round(value, 4)
        print(f"{name}: {shown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
