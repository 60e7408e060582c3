"""Mining as the ``mine`` job and ``almanac mine`` both run it: the LLM pairer on the describe
tier, the experiences a run selects (store version, time window, database, workspace), and the
labeled miner called with the run's options."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from agents.learn.mine import labeled_experiences, mine_labeled
from agents.learn.mine.labeled import MiningReport
from agents.learn.mine.pairer import LLMPairer, Pairer
from agents.learn.mine.templates import MIN_SUPPORT as TEMPLATE_SUPPORT
from agents.learn.mine.unlabeled import unlabeled_experiences
from kb.store import KnowledgeStore
from kb.target.database import Database
from ukf import ExperienceUKF

if TYPE_CHECKING:
    from server.limits import LLMGate
    from server.llm_factory import LLMTiers
    from server.settings import Settings


def tier_pairer(tiers: LLMTiers, settings: Settings, gate: LLMGate | None = None) -> LLMPairer:
    """The LLM pairer on the describe tier (else the default tier), as describe jobs use;
    with the server's ``gate``, each call gives way to questions (a background turn)."""
    from server.llm_factory import BackgroundLLM

    model = tiers.get(settings.describe_tier)
    return LLMPairer(BackgroundLLM(model, gate) if gate is not None else model)


def select_experiences(
    store: KnowledgeStore,
    *,
    since_version: int | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    database: str | None = None,
    workspace: str | None = None,
    unlabeled: bool = False,
) -> tuple[list[ExperienceUKF], int]:
    """Labeled (``unlabeled``: unlabeled) experiences to mine, and how many others the
    ``workspace`` filter left out.

    ``since``/``until`` bound the experiences' timestamps (``until`` excluded); ``workspace``
    (a workspace key's) keeps only that workspace's experiences; None keeps every one."""
    select = unlabeled_experiences if unlabeled else labeled_experiences
    found = select(store, since=since_version, database=database)
    found = [
        e
        for e in found
        if (since is None or e.timestamp >= since) and (until is None or e.timestamp < until)
    ]
    if workspace is None:
        return found, 0
    kept = [e for e in found if e.workspace == workspace]
    return kept, len(found) - len(kept)


def run_mining(
    store: KnowledgeStore,
    experiences: list[ExperienceUKF],
    *,
    targets: Mapping[str, Database],
    pairer: Pairer | None,
    rerun: bool,
    apply: bool,
    job_id: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    habits_over: list[ExperienceUKF] | None = None,
    template_support: int | None = None,
) -> MiningReport:
    """:func:`mine_labeled` as the CLI and the job call it (``rerun`` needs a target;
    ``habits_over``: the history preferences are counted over, default the experiences;
    ``template_support``: the query templates' fewest supporters, None the miner's default,
    0 for none)."""
    return mine_labeled(
        store,
        experiences,
        job_id=job_id,
        pairer=pairer,
        targets=targets,
        apply=apply,
        rerun=rerun and bool(targets),
        progress=progress,
        habits_over=habits_over,
        template_support=TEMPLATE_SUPPORT if template_support is None else template_support,
    )
