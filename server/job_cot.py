"""The ``cot`` job kind: checked CoT for the verified experiences that have none yet.

Parameters (:class:`CotParams`): ``database_name`` (default the configured target's name;
without a target, every database), ``experience_ids`` (only these), ``tier`` (the teacher:
an LLM tier by name, default the default tier, the largest model the server asks with),
``limit`` (ask about at most this many experiences; the rest are left for the next job),
``retry_failed`` (ask again where this model failed before) and ``dry_run`` (report, write
nothing).

The job runs :func:`agents.learn.cot.profile_cot`: each labeled or verified experience gets
a step-by-step explanation from the teacher tier, checked against its SQL and retried once
with the checker's reasons; what passes is stored on the experience (``profile["cot"]``) with
its verdict and model, what fails only as a verdict. The teacher's calls are background turns
(:class:`server.llm_factory.BackgroundLLM`): a question asked meanwhile goes first. Progress
is reported per experience, cancellation is checked there and inside the model's call; the
outcomes are written every few experiences and when the job stops, so a job run again after
its worker died (or cancelled and submitted again) asks only what is still missing.

Who: ``jobs:write`` and a global writer (:func:`server.access.check_global_writer`): the job
writes onto every workspace's experiences. The writes are audited (``cot``) with the
submitter and the job id. The result is the :class:`~agents.learn.cot.CotReport` as JSON.

New verified experiences get a CoT in the background: :func:`request_cot` (called after
feedback that stored a labeled experience) submits a ``cot`` job unless one is already
queued, which will pick the new experience up.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from agents.learn.cot import CotWriter, cot_experiences, profile_cot
from server.access import check_global_writer
from server.auth import Identity, Role
from server.worker import JobContext

if TYPE_CHECKING:
    from server.jobs import Job
    from server.state import AppState

log = logging.getLogger(__name__)

KIND = "cot"
COT_HOOK = Identity(key_id="cot-hook", role=Role.ADMIN, user="cot-hook")
# experiences one feedback-queued job explains at most (a large backlog is a job submitted by hand)
HOOK_LIMIT = 20
"""Who submits the background ``cot`` jobs after feedback (no API key stands behind it)."""
_START, _END = 0.05, 0.95


class CotParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    database_name: str | None = Field(
        default=None, description="[DATABASE:...] tag; default the configured target name"
    )
    experience_ids: list[str] | None = Field(
        default=None, max_length=10_000, description="only these experiences"
    )
    tier: str | None = Field(default=None, description="the teacher LLM tier; default tier")
    limit: int | None = Field(default=None, gt=0, description="ask about at most this many")
    retry_failed: bool = Field(default=False, description="ask again where this model failed")
    with_knowledge: bool = Field(
        default=False,
        description="also show the teacher the knowledge behind filters the question does not name",
    )
    dry_run: bool = False


def authorize_cot(identity: Identity) -> None:
    """CoT is written onto every workspace's experiences: not for a workspace-scoped key."""
    check_global_writer(identity, "cot jobs write")


def cot_unavailable(state: AppState) -> str | None:
    """Why ``cot`` jobs cannot run on this server (None: they can)."""
    return None if state.llms is not None else "no LLM (the teacher tier) is configured"


def run_cot(state: AppState, context: JobContext, params: CotParams) -> dict[str, Any]:
    submitter = Identity.from_dict(context.submitter)
    authorize_cot(submitter)
    writer = teacher_writer(state, params.tier)
    database = params.database_name or state.settings.resolved_target_name
    experiences = cot_experiences(
        state.store,
        database=None if params.experience_ids else database,
        ids=params.experience_ids,
    )
    where = f"database {database!r}" if database else "every database"
    context.progress(_START, f"{len(experiences)} verified experiences of {where}")

    def progress(done: int, total: int) -> None:
        fraction = _START + (_END - _START) * done / max(total, 1)
        context.progress(fraction, f"explained {done}/{total}")

    report = profile_cot(
        state.store,
        experiences,
        writer,
        retry_failed=params.retry_failed,
        with_knowledge=params.with_knowledge,
        limit=params.limit,
        apply=not params.dry_run,
        job_id=context.job_id,
        progress=progress,
        cancellation=context.cancellation,
    )
    context.log(report.summary())
    if report.written_ids:
        state.knowledge.record_job_writes(
            KIND,
            submitter,
            report.written_ids,
            report.store_version or state.store.version,
            {"model": report.model, "passed": report.passed, "failed": report.failed},
            context.job_id,
        )
    return report.to_dict()


def teacher_writer(state: AppState, tier: str | None) -> CotWriter:
    """A :class:`CotWriter` on the teacher ``tier`` (default: the default tier), each call a
    background turn at the server's LLM gate."""
    from server.llm_factory import BackgroundLLM

    if state.llms is None:
        raise RuntimeError("cot: no LLM is configured on this server (the teacher tier)")
    try:
        model = state.llms.get(tier)
    except KeyError as exc:
        raise ValueError(f"cot: {exc.args[0]}") from None
    return CotWriter(BackgroundLLM(model, state.llm_gate))


def request_cot(state: AppState, database: str | None = None) -> Job | None:
    """Submit a background ``cot`` job for what is missing (at most :data:`HOOK_LIMIT`
    experiences, the newest backlog first left to a ``cot`` job submitted by hand), unless a
    ``cot`` job is queued or running (the check and the submit are one locked transaction,
    so simultaneous feedback submits one job) or the server has no LLM; the job or None.
    Called after feedback stored a labeled experience; an experience that a running job
    misses is covered by the next feedback's job."""
    if cot_unavailable(state) or KIND not in state.job_kinds:
        return None
    params = CotParams(database_name=database, limit=HOOK_LIMIT).model_dump(exclude_none=True)
    job = state.jobs.submit_unless_pending(KIND, lambda _recent: (params, COT_HOOK.to_dict()))
    if job is None:
        return None
    state.wake_workers()
    log.info("submitted cot job %s for new verified experiences", job.id)
    return job
