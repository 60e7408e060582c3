"""Confidence wiring: the deployment's calibrator file and options, from the settings."""

from __future__ import annotations

import logging
from pathlib import Path

from agents.confidence.assess import (
    CalibratorSource,
    ConfidenceAssessor,
    ConfidenceOptions,
    packaged_calibrator,
)
from agents.confidence.recorded_answers import (
    FittingAnswers,
    RecordedAnswersError,
    packaged_answers,
)
from kb.store import KnowledgeStore
from server.settings import Settings

log = logging.getLogger(__name__)


def calibrator_path(settings: Settings) -> Path:
    """Where the calibrate job writes the deployment's calibrator."""
    return settings.confidence.calibrator_path or settings.data_dir / "calibrator.json"


def refit_packaged_answers(settings: Settings) -> FittingAnswers | None:
    """The recorded bench answers the packaged calibrator was fitted on, which a calibrate
    job fits on beside the deployment's verdicts; None when the settings say not to, when
    the packaged calibrator names none, or when they cannot be read (logged: the refit then
    uses the deployment's answers alone)."""
    if not settings.confidence.refit_with_packaged:
        return None
    names = packaged_calibrator().recordings
    if not names:
        return None
    try:
        return packaged_answers(names)
    except RecordedAnswersError as exc:
        log.warning("the calibrate job fits on the deployment's answers alone: %s", exc)
        return None


def confidence_options(settings: Settings) -> ConfidenceOptions:
    c = settings.confidence
    return ConfidenceOptions(
        abstain_below=c.abstain_below,
        withhold_rows=c.withhold_rows,
        target=c.target,
        escalation_target=c.escalation_target,
        max_samples=c.max_samples,
        adaptive=c.adaptive,
        suggestions=c.suggestions,
    )


def calibrator_source(settings: Settings) -> CalibratorSource:
    """The deployment's calibrator, falling back to the packaged one."""
    return CalibratorSource(calibrator_path(settings))


def confidence_assessor(
    settings: Settings,
    store: KnowledgeStore,
    database_name: str,
    dialect: str,
    calibrators: CalibratorSource | None = None,
) -> ConfidenceAssessor:
    """How the answers on ``database_name`` are assessed, as the settings say."""
    return ConfidenceAssessor(
        store,
        database_name,
        dialect=dialect,
        calibrators=calibrators or calibrator_source(settings),
        options=confidence_options(settings),
    )
