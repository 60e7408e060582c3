"""Everything the HTTP app works with, built once from settings: :class:`AppState`.

``build_state(settings)`` is the only place that turns configuration into objects: the
knowledge store, the server tables (keys, jobs, audit), the indices, the LLM tiers, the target
database, the limits and the metrics. Tests and embedders pass their own collaborators
(an embedder, a describer factory, LLM tiers) instead of the configured ones.

``state.start()`` starts the background threads (index loader and refresher, job workers, the
mine schedule of :mod:`server.mine_schedule`) and
``state.close()`` stops them and releases the connections; the app's lifespan calls both and
starts the warm-up, whose progress ``state.readiness`` holds (:mod:`server.readiness`).
"""

from __future__ import annotations

import logging
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

from sqlalchemy import Engine

from agents.pipeline_options import PipelineOptions
from indices.embeddings import Embedder
from indices.index_set import IndexSet
from kb.engine import create_store_engine
from kb.profile.model import Describer
from kb.store import KnowledgeStore
from kb.target.database import Database
from server.ask_service import AskService
from server.audit import AuditLog
from server.auth import Authenticator
from server.confidence import calibrator_source, confidence_options
from server.job_calibrate import VerdictCounter
from server.jobs import JobQueue
from server.keys import KeyStore
from server.knowledge import KnowledgeService
from server.limits import LLMGate, RateLimiter
from server.llm_factory import BackgroundLLM, LLMTiers
from server.metrics import Metrics
from server.mine_schedule import MineSchedule, MineScheduler
from server.readiness import Readiness
from server.settings import Settings
from server.sql_pool import SqlPool
from server.worker import JobWorker

if TYPE_CHECKING:
    from server.job_kinds import JobKind

log = logging.getLogger(__name__)
DescriberFactory = Callable[[], Describer]


class _Configured(Enum):
    """Sentinel of :func:`build_state`: build this collaborator from the settings."""

    FROM_SETTINGS = 0


FROM_SETTINGS = _Configured.FROM_SETTINGS
EMBEDDINGS_FILE = "embeddings.sqlite"


@dataclass
class AppState:
    """The server's collaborators (one per process)."""

    settings: Settings
    store: KnowledgeStore
    engine: Engine
    keys: KeyStore
    auth: Authenticator
    jobs: JobQueue
    audit: AuditLog
    indices: IndexSet
    knowledge: KnowledgeService
    metrics: Metrics
    rate_limiter: RateLimiter
    llm_gate: LLMGate
    llms: LLMTiers | None
    asks: AskService
    target: Database | None
    describer_factory: DescriberFactory | None
    readiness: Readiness = field(default_factory=Readiness)
    job_kinds: dict[str, JobKind] = field(default_factory=dict)
    workers: list[JobWorker] = field(default_factory=list)
    mine_scheduler: MineScheduler | None = None
    verdicts: VerdictCounter = field(default_factory=VerdictCounter)
    started_at: float = field(default_factory=time.time)

    def start(self) -> None:
        """Refresh the store's query statistics, start the indices, the job workers and the
        mine schedule (when one is configured)."""
        from server.job_kinds import runners_for

        self.store.planner.analyze()
        self.indices.start()
        if not self.workers:
            runners = runners_for(self)
            self.workers = [
                JobWorker(
                    self.jobs,
                    runners,
                    poll_s=self.settings.jobs.poll_s,
                    lease_s=self.settings.jobs.lease_s,
                    metrics=self.metrics,
                )
                for _ in range(self.settings.jobs.workers)
            ]
        for worker in self.workers:
            worker.start()
        if self.mine_scheduler is None:
            self.mine_scheduler = MineScheduler(
                self.jobs,
                self.store,
                MineSchedule.of(self.settings.jobs),
                database=self.settings.resolved_target_name,
            )
        self.mine_scheduler.start()  # only submits (any replica's worker runs the job)

    def wake_workers(self) -> None:
        for worker in self.workers:
            worker.wake()

    def cancel_local(self, job_id: str) -> None:
        for worker in self.workers:
            worker.cancel_local(job_id)

    def stop(self) -> None:
        """Stop the background threads (a running job goes back to the queue)."""
        if self.mine_scheduler is not None:
            self.mine_scheduler.stop()
        for worker in self.workers:
            worker.stop()
        self.workers = []
        self.indices.stop()

    def close(self) -> None:
        self.stop()
        self.asks.close()
        if self.target is not None:
            self.target.close()
        self.engine.dispose()
        self.store.close()


def resolve_pepper(settings: Settings) -> bytes:
    """The API-key pepper: the setting, else a file in the data dir (created once, 0600)."""
    if settings.api_key_pepper is not None:
        return settings.api_key_pepper.get_secret_value().encode()
    path = settings.data_dir / "secrets" / "api-key-pepper"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(32) + "\n")
        log.info("created the API key pepper %s", path)
    return path.read_text().strip().encode()


def open_keys(settings: Settings) -> tuple[KnowledgeStore, Engine, KeyStore]:
    """The store (migrated), an engine on it, and its key table (``almanac keys``)."""
    store = KnowledgeStore(settings.resolved_store_url)
    engine = create_store_engine(settings.resolved_store_url)
    keys = KeyStore(engine, resolve_pepper(settings))
    try:
        keys.ensure_pepper()  # replicas (and `almanac keys`) must share one pepper
    except Exception:
        engine.dispose()
        store.close()
        raise
    return store, engine, keys


def configured_embedder(settings: Settings) -> Embedder | None:
    if settings.embedder == "none":
        return None
    from indices.embeddings import shared_minilm

    vectors = settings.data_dir / EMBEDDINGS_FILE
    if settings.embedder == "minilm-torch":
        return shared_minilm(store=vectors)
    return shared_minilm(settings.data_dir / "models", store=vectors)


def configured_indices(store: KnowledgeStore, settings: Settings) -> IndexSet:
    """The indices over ``store`` built now, as the settings configure them (embedder,
    ``[retrieval]`` options): what the CLI's commands retrieve with."""
    return IndexSet.build(
        store, configured_embedder(settings), retrieval=settings.retrieval.options()
    )


def build_state(
    settings: Settings,
    *,
    embedder: Embedder | _Configured | None = FROM_SETTINGS,
    describer_factory: DescriberFactory | _Configured | None = FROM_SETTINGS,
    llms: LLMTiers | _Configured | None = FROM_SETTINGS,
) -> AppState:
    """Wire every collaborator from ``settings`` (the keywords replace configured ones)."""
    from server.job_kinds import JOB_KINDS

    readiness = Readiness()  # the server's start, for "ready after N s"
    store, engine, keys = open_keys(settings)
    metrics = Metrics()
    limits = settings.limits
    llm_gate = LLMGate(limits.llm_concurrency, limits.llm_queue, limits.llm_queue_wait_s)
    if llms is FROM_SETTINGS:
        llms = LLMTiers(settings.llm_tiers, settings.data_dir, metrics)
    if describer_factory is FROM_SETTINGS:
        describer_factory = _llm_describer_factory(llms, settings, llm_gate) if llms else None
    if embedder is FROM_SETTINGS:
        embedder = configured_embedder(settings)
    indices = IndexSet(
        store,
        embedder,
        refresh_s=settings.index_refresh_s,
        refit_interval_s=settings.experience_refit_s,
        retrieval=settings.retrieval.options(),
    )
    audit = AuditLog(engine)
    target = (
        Database(
            settings.target_url,
            timeout_s=settings.target_timeout_s,
            max_rows=settings.target_max_rows,
        )
        if settings.target_url
        else None
    )
    asks = AskService(
        store,
        indices,
        target=target,
        database_name=settings.resolved_target_name or "target",
        llms=llms,
        tier_names=list(settings.cascade_tiers),
        gate=llm_gate,
        metrics=metrics,
        sql_pool=SqlPool(limits.sql_concurrency, limits.sql_queue, limits.sql_per_key),
        options=PipelineOptions(
            feedback_agreement=settings.feedback_agreement,
            blame_threshold=settings.blame_threshold,
        ),
        readiness=readiness,
        confidence=(calibrator_source(settings), confidence_options(settings)),
    )
    state = AppState(
        settings=settings,
        store=store,
        engine=engine,
        keys=keys,
        auth=Authenticator(keys, cache_s=settings.auth_cache_s),
        jobs=JobQueue(engine, max_attempts=settings.jobs.max_attempts),
        audit=audit,
        indices=indices,
        knowledge=KnowledgeService(store, audit, indices),
        metrics=metrics,
        rate_limiter=RateLimiter(limits.rate_per_s, limits.rate_burst),
        llm_gate=llm_gate,
        llms=llms,
        asks=asks,
        target=target,
        describer_factory=describer_factory,
        readiness=readiness,
        job_kinds=dict(JOB_KINDS),
    )
    _register_gauges(state)
    return state


def _llm_describer_factory(tiers: LLMTiers, settings: Settings, gate: LLMGate) -> DescriberFactory:
    """Describers over the describe tier's model (the one questions share), each call taking
    a background turn at ``gate``: a question asked while a describe job runs goes first."""

    def make() -> Describer:
        from agents.learn.describe import LLMDescriber

        return LLMDescriber(BackgroundLLM(tiers.get(settings.describe_tier), gate))

    return make


def _register_gauges(state: AppState) -> None:
    metrics, gate = state.metrics, state.llm_gate
    metrics.add_gauge(
        "almanac_jobs",
        "Jobs in the queue by state",
        ("state",),
        lambda: {(s,): float(n) for s, n in state.jobs.counts_by_state().items()},
    )
    metrics.add_gauge(
        "almanac_llm_gate",
        "LLM gate: model calls running, questions waiting, refused so far, questions in "
        "progress, background calls (jobs, warm-up) running and waiting, warm-up calls running, "
        "background calls preempted by questions so far",
        ("kind",),
        lambda: {
            ("in_flight",): float(gate.in_flight),
            ("waiting",): float(gate.waiting),
            ("rejected_full",): float(gate.rejected_full),
            ("rejected_timeout",): float(gate.rejected_timeout),
            ("questions",): float(gate.questions),
            ("background",): float(gate.background),
            ("background_waiting",): float(gate.background_waiting),
            ("warming",): float(gate.warming),
            ("preempted",): float(gate.preempted),
        },
    )
    pool = state.asks.sql_pool
    metrics.add_gauge(
        "almanac_sql_pool",
        "User-sent SQL (feedback corrections): running, waiting, and refused so far",
        ("kind",),
        lambda: {
            ("running",): float(pool.running),
            ("waiting",): float(pool.waiting),
            ("rejected",): float(pool.rejected),
        },
    )
    metrics.add_gauge(
        "almanac_store_version",
        "The knowledge store's write version",
        (),
        lambda: {(): float(state.store.version)},
    )
