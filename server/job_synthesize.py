"""The ``synthesize`` job kind: verified experiences → new verified (question, SQL) pairs.

Parameters (:class:`SynthesizeParams`): ``limit`` (pairs stored at most; default none),
``transforms`` (a subset of ``filter``, ``group``, ``join``, ``window``, ``decompose``,
``vary``; default all), ``per_source`` (variants tried per source experience, default 6),
``database_name`` (default the configured target's; it must be the target, where the
variants run and the back-check asks) and ``retry`` (try again the variants an earlier run
dropped).

Each variant runs read-only on the target; its question is written by the describe tier's
LLM (else the default tier) and answered again by the ask tiers' default model
(:func:`server.mine_vote.vote_asker`, one greedy answer, not logged): a pair is kept only when
that answer gives the variant's result (:mod:`agents.learn.synth`). Every LLM call is a
background turn at the LLM gate, so questions asked meanwhile go first.

Who: ``jobs:write``, and only keys that write global knowledge (admin keys and keys without
a workspace, as for ``profile``): the pairs take the scope of their source experiences,
every workspace's. Progress is reported per source experience; cancellation is checked
there and inside each LLM call. A pair is written as soon as it passes, so a cancelled job
keeps what it stored; what it dropped is remembered on the sources, and a job run again
(also after its worker died) stores nothing twice and asks nothing again. The result is the
:class:`~agents.learn.synth.SynthesisReport` as JSON (``totals``, ``by_transform``: generated,
ran, known, failed, degenerate, question_failed, backcheck_failed, stored), its id list cut to
``LIST_LIMIT``; the stored pairs are audited (``synthesize``) with the submitter and the job.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agents.learn.synth import (
    TRANSFORMS,
    QuestionWriter,
    SynthOptions,
    synthesis_sources,
    synthesize,
    synthetic_experiences,
)
from server.access import check_global_writer
from server.auth import Identity
from server.confidence import calibrator_source
from server.mine_vote import background_ask_tiers, vote_asker
from server.worker import JobContext

if TYPE_CHECKING:
    from server.state import AppState

SYNTHESIZE_ACTION = "synthesize"
LIST_LIMIT = 100
_START, _END = 0.05, 0.95
Transform = Literal["filter", "group", "join", "window", "decompose", "vary"]


class SynthesizeParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    limit: int | None = Field(default=None, ge=0, description="pairs stored at most")
    transforms: list[Transform] | None = Field(
        default=None, description=f"transforms to apply; default all of {list(TRANSFORMS)}"
    )
    per_source: int = Field(default=6, ge=1, le=100, description="variants per experience")
    database_name: str | None = Field(
        default=None, description="[DATABASE:...] to synthesize for; default the target's"
    )
    retry: bool = Field(default=False, description="retry variants dropped by earlier runs")

    def options(self) -> SynthOptions:
        transforms = tuple(dict.fromkeys(self.transforms)) if self.transforms else TRANSFORMS
        return SynthOptions(
            transforms=transforms, per_source=self.per_source, limit=self.limit, retry=self.retry
        )


def authorize_synthesize(identity: Identity) -> None:
    """Synthetic pairs go to every scope their sources are in: global writers only."""
    check_global_writer(identity, "synthesize jobs write")


def unavailable(state: AppState) -> str | None:
    """Why the kind cannot run on this server (None: it can)."""
    if state.target is None:
        return "no target database is configured"
    if state.llms is None:
        return "no LLM is configured"
    return None


def question_writer(state: AppState) -> QuestionWriter:
    """The describe tier's model (else the default), each call a background turn."""
    from server.llm_factory import BackgroundLLM

    assert state.llms is not None
    model = state.llms.get(state.settings.describe_tier)
    return QuestionWriter(BackgroundLLM(model, state.llm_gate))


def run_synthesize(
    state: AppState, context: JobContext, params: SynthesizeParams
) -> dict[str, Any]:
    submitter = Identity.from_dict(context.submitter)
    authorize_synthesize(submitter)  # also for jobs queued before the rule existed
    reason = unavailable(state)
    if reason is not None:
        raise RuntimeError(f"synthesize: {reason}")
    assert state.target is not None
    target_name = state.settings.resolved_target_name or state.asks.database_name
    database = params.database_name or target_name
    if database != target_name:
        raise RuntimeError(
            f"synthesize: database {database!r} is not the target {target_name!r}, where the "
            "variants run and the back-check asks"
        )
    vote = vote_asker(
        background_ask_tiers(state),
        store=state.store,
        retriever=state.indices.retriever,
        database=state.target,
        database_name=database,
        options=state.asks.options,
        calibrators=calibrator_source(state.settings),
    )
    sources = synthesis_sources(state.store, database=database)
    context.progress(_START, f"synthesizing from {len(sources)} experience(s) of {database!r}")

    def step(done: int, total: int) -> None:  # checks for cancellation per source
        fraction = _START + (_END - _START) * done / max(total, 1)
        context.progress(fraction, f"synthesized from {done}/{total} experiences")

    try:
        report = synthesize(
            state.store,
            sources,
            targets={database: state.target},
            writer=question_writer(state),
            ask=lambda draft: vote(draft, 1),
            options=params.options(),
            job_id=context.job_id,
            progress=step,
            cancellation=context.cancellation,
        )
    finally:  # stopped or not, what was stored is audited
        _audit(state, context, submitter, database)
    context.log(report.summary())
    result = report.to_dict()
    result["database"] = database
    result["stored_count"] = len(report.stored_ids)
    if len(report.stored_ids) > LIST_LIMIT:
        result["stored_ids"] = report.stored_ids[:LIST_LIMIT]
        result["truncated"] = {"stored_ids": len(report.stored_ids) - LIST_LIMIT}
    return result


def _audit(state: AppState, context: JobContext, submitter: Identity, database: str) -> None:
    stored = [
        e.id
        for e in synthetic_experiences(state.store, database=database)
        if e.content_resources["synthetic"].get("job") == context.job_id
    ]
    if stored:
        state.knowledge.record_job_writes(
            SYNTHESIZE_ACTION,
            submitter,
            stored,
            state.store.version,
            {"database": database, "stored": len(stored)},
            context.job_id,
        )
