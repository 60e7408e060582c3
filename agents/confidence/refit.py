"""Refitting the calibrator on the deployment's verified answers (the lifelong loop).

Every answer the pipeline logs keeps its confidence signals in its experience's record
(``content_resources["answers"][answer_id]["signals"]``); feedback adds the verdict there.
:func:`verified_answers` collects the answers that have both: ``correct`` is a right answer,
``wrong`` (with or without a correction) a wrong one. :func:`refit_calibrator` fits a new
calibrator on them (:func:`~agents.confidence.calibrator.fit_calibrator`, version one more
than the current one) and saves it where the server reads it. With too few verified answers
(or only one verdict) nothing is written: the calibrator in use (the packaged one fitted on
the bench datasets) stays, and the report says how many more are needed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.confidence.calibrator import Calibrator, fit_calibrator
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

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def summary(self) -> str:
        if not self.written:
            return f"calibrator not refitted: {self.note}"
        return (
            f"calibrator v{self.version} ({self.method}) fitted on {self.answers} verified "
            f"answers ({self.correct} correct): {self.path}"
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
) -> RefitReport:
    """Fit a calibrator on the verified answers and save it at ``path`` (see above)."""
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
    fitted = fit_calibrator(
        data.rows,
        data.labels,
        previous=current,
        source="deployment",
        min_examples=min_examples,
        min_per_class=min_per_class,
    )
    report.version, report.method, report.note = fitted.version, fitted.method, fitted.note
    if fitted.method == "prior":  # the fit fell back: what is in use stays
        report.note = f"{fitted.note}: {current.method} v{current.version} stays"
        return report
    if not dry_run:
        fitted.save(path)
        report.written = True
    log.info(report.summary())
    return report
