"""Refitting the calibrator on the deployment's verified answers (the lifelong loop).

Every answer the pipeline logs keeps its confidence signals in its experience's record
(``content_resources["answers"][answer_id]["signals"]``); feedback adds the verdict there.
:func:`verified_answers` collects the answers that have both: ``correct`` is a right answer,
``wrong`` (with or without a correction) a wrong one. :func:`refit_calibrator` fits a new
calibrator on them (:func:`~agents.confidence.calibrator.fit_calibrator`, version one more
than the current one) and saves it where the server reads it. With too few verified answers
(or only one verdict) nothing is written: the calibrator in use (the packaged one fitted on
the bench datasets) stays, and the report says how many more are needed.

With ``packaged`` answers (the recorded bench answers the packaged calibrator was fitted on,
:func:`agents.confidence.recorded_answers.packaged_answers`), the fit is on both: the
deployment's verdicts move the calibrator where they differ from the bench's, while the
bench's keep it steady where the deployment has seen few answers (a fit on a deployment's
first 40 verdicts alone can rank on whichever signal those happened to separate). This is
how the bench's "pooled" figures are measured (``python -m bench.calibration report``: each
set predicted by a fit on the other sets and its own other folds). The minimums still count
the deployment's own verdicts: with fewer, the refit would be the packaged calibrator again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.confidence.calibrator import Calibrator, fit_calibrator
from agents.confidence.recorded_answers import FittingAnswers
from kb.store import KnowledgeStore

log = logging.getLogger(__name__)
MIN_EXAMPLES = 40
MIN_PER_CLASS = 8


@dataclass
class VerifiedAnswers:
    """Signals and verdicts of the answers people judged."""

    rows: list[dict[str, float]] = field(default_factory=list)
    labels: list[bool] = field(default_factory=list)
    answer_ids: list[str] = field(default_factory=list)

    @property
    def correct(self) -> int:
        return sum(self.labels)


@dataclass
class RefitReport:
    """What a refit did: the answers it saw, and the calibrator written (or why none)."""

    answers: int
    correct: int
    written: bool
    path: str
    version: int | None = None
    method: str | None = None
    note: str = ""
    packaged: int = 0  # recorded bench answers fitted on beside the deployment's

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def summary(self) -> str:
        if not self.written:
            return f"calibrator not refitted: {self.note}"
        packaged = f" and {self.packaged} recorded bench answers" if self.packaged else ""
        return (
            f"calibrator v{self.version} ({self.method}) fitted on {self.answers} verified "
            f"answers ({self.correct} correct){packaged}: {self.path}"
        )


def verified_answers(
    store: KnowledgeStore,
    *,
    database: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> VerifiedAnswers:
    """Every logged answer with both confidence signals and a verdict (of ``database``)."""
    found = VerifiedAnswers()
    for seen, entry in enumerate(store.iterate(type="experience"), start=1):
        resources = entry.content_resources
        if database is not None and resources.get("database") != database:
            continue
        for answer_id, record in (resources.get("answers") or {}).items():
            verdict, signals = record.get("verdict"), record.get("signals")
            if verdict not in ("correct", "wrong") or not isinstance(signals, dict):
                continue
            found.rows.append(dict(signals))  # the calibrator reads a non-number as missing
            found.labels.append(verdict == "correct")
            found.answer_ids.append(answer_id)
        if progress is not None and seen % 200 == 0:
            progress(seen)
    return found


def refit_calibrator(
    store: KnowledgeStore,
    path: Path,
    current: Calibrator,
    *,
    database: str | None = None,
    min_examples: int = MIN_EXAMPLES,
    min_per_class: int = MIN_PER_CLASS,
    dry_run: bool = False,
    packaged: FittingAnswers | None = None,
) -> RefitReport:
    """Fit a calibrator on the verified answers (and the ``packaged`` ones) and save it at
    ``path`` (see above)."""
    data = verified_answers(store, database=database)
    report = RefitReport(len(data.labels), data.correct, False, str(path))
    wrong = len(data.labels) - data.correct
    if len(data.labels) < min_examples or min(data.correct, wrong) < min_per_class:
        report.note = (
            f"{len(data.labels)} verified answers ({data.correct} correct, {wrong} wrong); "
            f"a fit needs {min_examples}, at least {min_per_class} of each: "
            f"{current.method} v{current.version} ({current.source}) stays"
        )
        return report
    bench = packaged or FittingAnswers()
    fitted = fit_calibrator(
        [*bench.rows, *data.rows],
        [*bench.labels, *data.labels],
        previous=current,
        source="deployment+recordings" if len(bench) else "deployment",
        min_examples=min_examples,
        min_per_class=min_per_class,
    )
    fitted.recordings = list(bench.sources)
    report.packaged = len(bench)
    report.version, report.method, report.note = fitted.version, fitted.method, fitted.note
    if fitted.method == "prior":  # the fit fell back: what is in use stays
        report.note = f"{fitted.note}: {current.method} v{current.version} stays"
        return report
    if not dry_run:
        fitted.save(path)
        report.written = True
    log.info(report.summary())
    return report
