"""The vote of unlabeled mining, as the ``mine`` job and ``almanac mine --unlabeled`` ask it.

Each unlabeled question is asked again through a :class:`~agents.pipeline.Pipeline` built as
the ask path builds it (the live store and retriever, the target, the pipeline options) but
with question logging off (a vote is not a question anyone asked) and ``n`` samples of the
default (last) ask tier: the largest model votes. The question is asked in its logged context
(query time, user, workspace), so "last month" means the month it meant then and the asker's
scope decides what knowledge is retrieved. The thresholds come from the settings
(``ALMANAC_JOBS__MINE_VOTE_*``, :func:`vote_thresholds`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agents.answer import Answer
from agents.confidence.assess import CalibratorSource, ConfidenceAssessor
from agents.learn.mine.unlabeled import VoteAsker, VoteThresholds
from agents.pipeline import AskOptions, ModelTier, Pipeline
from agents.pipeline_options import PipelineOptions
from indices.retriever import Retriever
from kb.store import KnowledgeStore
from kb.target.database import Database
from server.confidence import calibrator_source
from server.settings import JobSettings
from ukf import ExperienceUKF

if TYPE_CHECKING:
    from server.state import AppState


def vote_thresholds(jobs: JobSettings) -> VoteThresholds:
    """The thresholds ``ALMANAC_JOBS__MINE_VOTE_*`` set."""
    return VoteThresholds(
        samples=jobs.mine_vote_samples,
        min_share=jobs.mine_vote_min_share,
        min_confidence=jobs.mine_vote_min_confidence,
        min_ran=jobs.mine_vote_min_ran,
        allow_empty=jobs.mine_vote_allow_empty,
    )


def vote_asker(
    tiers: list[ModelTier],
    *,
    store: KnowledgeStore,
    retriever: Retriever | Callable[[], Retriever],
    database: Database,
    database_name: str,
    options: PipelineOptions | None = None,
    calibrators: CalibratorSource | None = None,
) -> VoteAsker:
    """``(experience, n) -> Answer``: the question asked again with ``n`` samples of the last
    of ``tiers``, executed, not logged (see the module docstring). Its confidence comes from
    ``calibrators`` (the deployment's; default: the packaged calibrator)."""
    confidence = ConfidenceAssessor(
        store, database_name, dialect=database.dialect, calibrators=calibrators
    )
    pipeline = Pipeline(
        store=store,
        retriever=retriever,
        database=database,
        database_name=database_name,
        tiers=tiers[-1:],
        options=replace(options or PipelineOptions(), log_questions=False),
        confidence=confidence,
    )

    def ask(experience: ExperienceUKF, n: int) -> Answer:
        options = AskOptions(n=n, adaptive=False, abstain=False)
        return pipeline.ask(experience.question, experience.context, options)

    return ask


def describe_vote(vote: dict[str, Any] | None) -> str:
    """One line about a report's vote, for logs and the CLI."""
    if not vote:
        return "no vote"
    refused = ", ".join(f"{k} {v}" for k, v in sorted(vote["refused_by"].items())) or "none"
    return (
        f"vote: {vote['asked']} asked, {vote['remembered']} remembered; "
        f"{vote['kept']} kept, {vote['refused']} refused ({refused})"
    )


def job_asker(state: AppState, database: str | None, target_name: str | None) -> VoteAsker:
    """The vote's asker on the server's target (:mod:`server.mine_vote`), each LLM call a
    background turn; refused before anything is mined when it cannot run."""

    if state.llms is None or state.target is None or target_name is None:
        raise RuntimeError(
            "mode 'unlabeled' asks each question again: it needs the server's target "
            "database and an LLM tier"
        )
    if database != target_name:
        raise RuntimeError(
            f"mode 'unlabeled': questions of database {database!r} cannot be asked on the "
            f"target {target_name!r}"
        )
    return vote_asker(
        background_ask_tiers(state),
        store=state.store,
        retriever=state.indices.retriever,
        database=state.target,
        database_name=state.asks.database_name,
        options=state.asks.options,
        calibrators=calibrator_source(state.settings),
    )


def background_ask_tiers(state: AppState) -> list[ModelTier]:
    """The server's ask tiers (the default one alone without a cascade), each LLM call a
    background turn at the LLM gate: how jobs (the vote, the gate) ask questions."""
    from server.llm_factory import BackgroundLLM

    llms = state.llms
    assert llms is not None
    names: list[str | None] = [*state.asks.tier_names] or [None]  # None: the default tier
    return [
        ModelTier(name or "default", BackgroundLLM(llms.get(name), state.llm_gate))
        for name in names
    ]
