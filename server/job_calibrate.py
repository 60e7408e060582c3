"""The ``calibrate`` job kind: refit the answers' confidence calibrator on verified answers.

Parameters (:class:`CalibrateParams`): ``database_name`` (only that database's answers;
default every database: one calibrator serves the deployment), ``dry_run`` (fit and report,
write nothing).

The job runs :func:`agents.confidence.refit.refit_calibrator` over every logged answer that
has both confidence signals and a verdict, and writes the new calibrator (its version one
more than the one in use) to ``ALMANAC_CONFIDENCE__CALIBRATOR_PATH`` (default
``<data_dir>/calibrator.json``), which the ask path reloads when the file changes. The
recorded bench answers the packaged calibrator was fitted on are fitted on beside them
(``ALMANAC_CONFIDENCE__REFIT_WITH_PACKAGED``). With too few verified answers nothing is
written and the calibrator in use stays.

Feedback keeps a count of verdicts since the last ``calibrate`` job; every
``ALMANAC_CONFIDENCE__REFIT_EVERY`` of them, :func:`request_calibrate` submits one (unless
one is already queued), so the confidence follows the deployment as people judge answers.

Who: ``jobs:write`` from a key that is not scoped to a workspace (the calibrator serves
everyone). The result is the :class:`~agents.confidence.refit.RefitReport` as JSON.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from agents.confidence.refit import refit_calibrator
from server.access import check_global_writer
from server.auth import Identity, Role
from server.confidence import calibrator_path, refit_packaged_answers
from server.worker import JobContext

if TYPE_CHECKING:
    from server.jobs import Job
    from server.state import AppState

log = logging.getLogger(__name__)
KIND = "calibrate"
CALIBRATE_HOOK = Identity(key_id="calibrate-hook", role=Role.ADMIN, user="calibrate-hook")
"""Who submits the ``calibrate`` jobs that feedback triggers (no API key stands behind it)."""


class CalibrateParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    database_name: str | None = Field(
        default=None, description="only this database's answers; default every database"
    )
    dry_run: bool = Field(default=False, description="fit and report, write nothing")


def authorize_calibrate(identity: Identity) -> None:
    check_global_writer(identity, "calibrate jobs replace the deployment's calibrator")


def run_calibrate(state: AppState, context: JobContext, params: CalibrateParams) -> dict[str, Any]:
    authorize_calibrate(Identity.from_dict(context.submitter))
    calibrators = state.asks.confidence[0] if state.asks.confidence else None
    path = calibrator_path(state.settings)
    current = calibrators.current() if calibrators is not None else None
    if current is None:
        from agents.confidence.assess import packaged_calibrator

        current = packaged_calibrator()
    context.progress(
        0.1, f"collecting verified answers; in use: {current.method} v{current.version}"
    )
    context.check()
    report = refit_calibrator(
        state.store,
        path,
        current,
        database=params.database_name,
        dry_run=params.dry_run,
        packaged=refit_packaged_answers(state.settings),
    )
    context.log(report.summary())
    return report.to_dict()


class VerdictCounter:
    """Verdicts given since the last ``calibrate`` job was submitted (this process)."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def add(self, every: int) -> bool:
        """Count one verdict; True (and back to zero) when ``every`` have been counted."""
        with self._lock:
            self.count += 1
            if every <= 0 or self.count < every:
                return False
            self.count = 0
            return True


def request_calibrate(state: AppState, counter: VerdictCounter) -> Job | None:
    """After a verdict: submit a ``calibrate`` job once ``refit_every`` verdicts were given
    since the last one, unless one is queued or running; the job or None."""
    if KIND not in state.job_kinds or not counter.add(state.settings.confidence.refit_every):
        return None
    job = state.jobs.submit_unless_pending(KIND, lambda _recent: ({}, CALIBRATE_HOOK.to_dict()))
    if job is None:
        return None
    state.wake_workers()
    log.info(
        "submitted calibrate job %s after %d verdicts",
        job.id,
        state.settings.confidence.refit_every,
    )
    return job
