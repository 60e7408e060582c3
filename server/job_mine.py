"""The ``mine`` job kind: labeled experiences → candidate knowledge, as a job.

Parameters (:class:`MineParams`): ``mode`` (``labeled``: questions with a known SQL;
``unlabeled``: questions only, each asked again by the vote and mined where the vote is sure,
:mod:`agents.learn.mine.unlabeled` with the ``ALMANAC_JOBS__MINE_VOTE_*`` thresholds, which
needs the target and an LLM tier, :mod:`server.mine_vote`; ``both``: labeled, then
unlabeled), ``since_version`` (experiences
written after that store version), ``since``/``until`` (a window on the experiences'
timestamps), ``database_name`` (default the configured target's name; without a target,
every database), ``llm_pairer`` (pair what alignment leaves with the describe tier's LLM),
``rerun`` (skip experiences whose SQL fails on the target now), ``dry_run``, and ``gate``
with ``gate_held`` (default 60) and ``gate_batch`` (default 8): after the merge, the
regression gate (:mod:`server.mine_gate`) replays up to ``gate_held`` verified questions on a
scratch copy and activates the job's new candidates that break none of them, rejecting the
others; it needs the target and an LLM tier, whose calls give way to questions;
``template_support`` (default 2; 0: none): the fewest labeled questions sharing one slotted
SQL that make a query template.

Who: ``jobs:write`` (ops, admin), like the other knowledge-writing jobs. A mined entry takes
the scope of the experience it came from (global, a workspace, a user) and enters as an
inactive candidate (:mod:`agents.learn.mine.candidates`), unused by ``ask`` until activated.
Admin keys and keys without a workspace mine every experience; a key scoped to a workspace
mines only the experiences of its workspace (the others are left out and counted in the
report's ``scope``), so its candidates stay in its workspace.

Progress is reported per experience, and cancellation is checked there (and inside the
pairer's LLM call through the job's current cancellation token). Each miner's merge writes
its candidates in one transaction at its end: a job stopped before it has written no
candidate (with ``both``, one stopped during the unlabeled part keeps the labeled part's),
and a job run again after its worker died (the lease requeues it) merges into what an earlier
attempt wrote, inserting nothing twice (:func:`kb.merge.merge_mined`). The unlabeled vote is
remembered on each experience as it goes (every ten questions), so a job run again asks only
the questions not voted on yet. The job's result is the
:class:`~agents.learn.mine.labeled.MiningReport` as JSON, its long lists truncated, with the
gate's :class:`~agents.learn.gate.GateReport` under ``gate``. The gate reports progress from
0.9 to 1.0, per evaluation; each decision is written as it is made and audited
(``mine.gate``, one row for the activated, one for the rejected); cancelled during the gate,
the job ends ``cancelled``, what was decided stays decided and the rest stay candidates.
"""

from __future__ import annotations

from contextlib import suppress
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer, model_validator

from agents.learn.mine.labeled import MiningReport
from agents.learn.mine.pairer import LLMPairer
from agents.learn.mine.templates import MIN_SUPPORT as TEMPLATE_SUPPORT
from agents.learn.mine.unlabeled import mine_unlabeled
from kb.store import KnowledgeStore
from kb.target.database import Database
from server.auth import Identity, Role
from server.mine_gate import DEFAULT_BATCH, DEFAULT_HELD, GATE_ACTION, run_gate
from server.mine_run import run_mining, select_experiences, tier_pairer
from server.mine_vote import background_ask_tiers, describe_vote, job_asker, vote_thresholds
from server.worker import JobCancelledError, JobContext, JobInterruptedError

if TYPE_CHECKING:
    from server.state import AppState

LIST_LIMIT = 100
"""Longest list kept in a job result (``skipped``, ``candidate_ids``); the rest is counted."""
_MINING_START, _MINING_END = 0.05, 0.9  # the gate, when asked for, takes 0.9 to 1.0


class MineParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: Literal["labeled", "unlabeled", "both"] = Field(
        default="labeled",
        description="labeled: questions with their SQL; unlabeled: questions only, by the vote",
    )
    since_version: int | None = Field(
        default=None, ge=0, description="only experiences written after this store version"
    )
    since: datetime | None = Field(default=None, description="experiences at or after (UTC)")
    until: datetime | None = Field(default=None, description="experiences before (UTC)")
    database_name: str | None = Field(
        default=None, description="[DATABASE:...] to mine; default the configured target's"
    )
    llm_pairer: bool = Field(default=False, description="pair leftovers with the describe LLM")
    rerun: bool = Field(default=False, description="skip experiences whose SQL fails now")
    dry_run: bool = Field(default=False, description="report without writing")
    gate: bool = Field(
        default=False, description="run the regression gate on the new candidates (not dry_run)"
    )
    gate_held: int = Field(default=DEFAULT_HELD, ge=1, description="held questions at most")
    gate_batch: int = Field(default=DEFAULT_BATCH, ge=1, description="candidates per batch")
    template_support: int = Field(
        default=TEMPLATE_SUPPORT,
        ge=0,
        description="fewest labeled questions sharing one slotted SQL that make a query"
        " template (0: no templates)",
    )

    @model_validator(mode="after")
    def _check(self) -> MineParams:
        self.since, self.until = _utc(self.since), _utc(self.until)
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise ValueError(f"since ({self.since}) must be before until ({self.until})")
        return self

    @field_serializer("since", "until")
    def _iso(self, value: datetime | None) -> str | None:
        return value.isoformat() if value is not None else None  # job params are JSON


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


# ------------------------------------------------------------------------------ the job
def mining_workspace(identity: Identity) -> str | None:
    """The workspace whose experiences ``identity`` may mine; None: every experience."""
    return None if identity.role is Role.ADMIN else identity.workspace


def run_mine(state: AppState, context: JobContext, params: MineParams) -> dict[str, Any]:
    submitter = Identity.from_dict(context.submitter)
    workspace = mining_workspace(submitter)
    target_name = state.settings.resolved_target_name
    database = params.database_name or target_name
    targets: dict[str, Database] = {}
    if state.target is not None and target_name is not None:
        targets[target_name] = state.target
    pairer = _job_pairer(state) if params.llm_pairer else None
    gating = params.gate and not params.dry_run
    if gating:
        _check_gate(state, database, target_name)
    modes = ["labeled", "unlabeled"] if params.mode == "both" else [params.mode]
    asker = job_asker(state, database, target_name) if "unlabeled" in modes else None
    where = f"database {database!r}" if database else "every database"
    scope = f" of workspace {workspace!r}" if workspace else ""
    span = (_MINING_END - _MINING_START) / len(modes)
    results: list[dict[str, Any]] = []
    for index, mode in enumerate(modes):
        begin = _MINING_START + index * span
        experiences, out_of_scope = select_experiences(
            state.store,
            since_version=params.since_version,
            since=params.since,
            until=params.until,
            database=database,
            workspace=workspace,
            unlabeled=mode == "unlabeled",
        )
        total = len(experiences)
        context.progress(begin, f"mining {total} {mode} experience(s){scope} of {where}")

        def step(done: int, count: int, begin: float = begin, mode: str = mode) -> None:
            # checks for cancellation per experience
            verb = "voted on" if mode == "unlabeled" else "mined"
            context.progress(begin + span * done / max(count, 1), f"{verb} {done}/{count}")

        if mode == "unlabeled":
            assert asker is not None
            report = mine_unlabeled(
                state.store,
                experiences,
                ask=asker,
                thresholds=vote_thresholds(state.settings.jobs),
                job_id=context.job_id,
                pairer=pairer,
                targets=targets,
                databases=list(targets),
                apply=not params.dry_run,
                progress=step,
            )
        else:
            partial = any(v is not None for v in (params.since_version, params.since, params.until))
            history = (  # preferences are shares of a scope's whole history
                select_experiences(state.store, database=database, workspace=workspace)[0]
                if partial
                else None
            )
            report = run_mining(
                state.store,
                experiences,
                targets=targets,
                pairer=pairer,
                rerun=params.rerun,
                apply=not params.dry_run,
                job_id=context.job_id,
                progress=step,
                habits_over=history,
                template_support=params.template_support,
            )
        # written: no cancellation from here on but at the next mode's first step
        results.append(
            _record(state, context, submitter, report, database, workspace, out_of_scope)
        )
    result = results[0]
    if len(results) > 1:
        result["unlabeled"] = results[1]
    result["dry_run"] = params.dry_run
    candidate_ids = [uid for r in results for uid in r["all_candidate_ids"]]
    for r in results:
        del r["all_candidate_ids"]
    if gating and candidate_ids:
        result["gate"] = _gate(state, context, params, candidate_ids, submitter)
    return result


def _record(
    state: AppState,
    context: JobContext,
    submitter: Identity,
    report: MiningReport,
    database: str | None,
    workspace: str | None,
    out_of_scope: int,
) -> dict[str, Any]:
    """Log and audit one miner's report; its job result (with every candidate id under
    ``all_candidate_ids``, for the gate)."""
    result = job_result(report, database=database, workspace=workspace, left_out=out_of_scope)
    result["all_candidate_ids"] = list(report.candidate_ids)
    vote = f"; {describe_vote(report.vote)}" if report.vote is not None else ""
    context.log(
        f"{report.miner}: mined {report.mined_experiences}/{report.experiences} experiences: "
        f"{dict(report.mined) or 'nothing'}; merge {report.merge or 'nothing'}{vote}"
    )
    written = _written_by_mining(state.store, report.store_version)
    if written and report.store_version is not None:
        detail = {k: result[k] for k in ("mined", "merge", "dropped", "database", "scope")}
        detail["miner"] = report.miner
        state.knowledge.record_job_writes(
            "mine", submitter, written, report.store_version, detail, context.job_id
        )
    return result


def _check_gate(state: AppState, database: str | None, target_name: str | None) -> None:
    """Refuse a gate that cannot run, before anything is mined."""
    if state.llms is None or state.target is None:
        raise RuntimeError("gate: it needs the server's target database and an LLM tier")
    if database != target_name:
        raise RuntimeError(
            f"gate: candidates of database {database!r} cannot be measured on the target "
            f"{target_name!r}"
        )


def _gate(
    state: AppState,
    context: JobContext,
    params: MineParams,
    candidate_ids: list[str],
    submitter: Identity,
) -> dict[str, Any]:
    """The regression gate on the job's new candidates (:mod:`server.mine_gate`); decisions
    are audited; a cancelled gate audits what it decided, then the job ends cancelled."""

    llms, target = state.llms, state.target
    assert llms is not None and target is not None  # _check_gate
    tiers = background_ask_tiers(state)

    def step(fraction: float, message: str) -> None:
        # a stop is not raised here: the gate sees the job's token at the next question
        with suppress(JobCancelledError, JobInterruptedError):
            context.progress(_MINING_END + (1 - _MINING_END) * fraction, f"gate: {message}")

    report = run_gate(
        state.store,
        candidate_ids,
        tiers=tiers,
        database=target,
        database_name=state.asks.database_name,
        embedder=state.indices.embedder,
        held=params.gate_held,
        batch=params.gate_batch,
        options=state.asks.options,
        progress=step,
        cancellation=context.cancellation,
    )
    for decision, ids in (("activated", report.activated), ("rejected", report.rejected)):
        if ids:
            detail = {
                "decision": decision,
                "baseline_ex": round(report.baseline_ex, 4),
                "final_ex": round(report.final_ex, 4),
                "held": report.held,
                "targeted": report.targeted,
                "cancelled": report.cancelled,
            }
            version = state.store.version
            state.knowledge.record_job_writes(
                GATE_ACTION, submitter, ids, version, detail, context.job_id
            )
    context.log(
        f"gate: {len(report.activated)} activated, {len(report.rejected)} rejected; "
        f"EX {report.baseline_ex:.3f} -> {report.final_ex:.3f} on {report.held} held "
        f"({report.targeted} saying a candidate's phrase)"
    )
    if report.cancelled:
        context.check()  # the job's token stopped the gate: the job ends cancelled
    return report.to_dict()


def job_result(
    report: MiningReport, *, database: str | None, workspace: str | None, left_out: int
) -> dict[str, Any]:
    """The report as a job result: lists cut to :data:`LIST_LIMIT`, with their full counts."""
    result = report.to_dict()
    for name in ("skipped", "candidate_ids"):
        items = result[name]
        result[f"{name}_count"] = len(items)
        if len(items) > LIST_LIMIT:
            result[name] = items[:LIST_LIMIT]
            result.setdefault("truncated", {})[name] = len(items) - LIST_LIMIT
    result["database"] = database
    result["scope"] = {"workspace": workspace, "left_out": left_out}
    return result


def _job_pairer(state: AppState) -> LLMPairer:
    if state.llms is None:
        raise RuntimeError("llm_pairer: no LLM is configured on this server")
    return tier_pairer(state.llms, state.settings, state.llm_gate)


def _written_by_mining(store: KnowledgeStore, version: int | None) -> list[str]:
    """Ids of the entries the merge's transaction wrote (each row records its version)."""
    if version is None:
        return []
    return [uid for seq, uid, _type in store.written_since(version - 1) if seq == version]
