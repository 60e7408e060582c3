"""Mining inside a benchmark stream (issue 22, item 9): ``python -m bench run --stream labeled
--mine-every N [--mine-gate]``.

A :class:`StreamMiner` collects the experiences a learning system stores while the stream
runs and, when the runner says a round is due (every N questions seen, and once after
``--learn-split``), mines those observed since the last round into candidates
(labeled ones by :func:`agents.learn.mine.mine_labeled`; unlabeled ones, the questions of an
unlabeled stream with the system's own SQL, by the vote:
:func:`agents.learn.mine.unlabeled.mine_unlabeled` asks each question again with
``vote_samples`` candidates through the system's pipeline and mines only those whose
results agree, with trust ``unlabeled``) and activates them:

- **without the gate**: every new candidate is activated at once (nothing measured);
- **with the gate** (:class:`agents.learn.gate.RegressionGate`): per mining round and
  database, the held set is the labeled experiences of that database already observed that
  no candidate of the round was mined from, at most ``gate_held``, *targeted* as
  ``server.mine_gate`` picks them (:func:`agents.learn.gate_held.held_set`): first the
  questions that say a candidate's phrase, round-robin over the candidates, then the others
  in the SHA-256 order of their ids. Each gate run records how many held questions were
  targeted (``targeted``: with none, the gate could not measure what the candidates change).
  A round with no such experience (a first round where every question seen gave a
  candidate) keeps its candidates waiting and they are gated at the next round, against the
  experiences observed since. After ``--learn-split`` every revealed question is mined, as
  without the gate: nothing is held out of mining beforehand, since the held set leaves out
  every candidate's sources (the union of the experiences that gave it) and the gate hides
  its held questions from retrieval, so a candidate is never judged on the question it came
  from nor on its worked example; and the gated and ungated runs then mine the same
  candidates, so they differ by the gate's decisions alone (a held-out pool chosen before
  mining was random, hence rarely saying a candidate's phrase, and took its questions out of
  mining).
  The gate asks the held questions with the system's own models: that is its cost, recorded
  per round (``gate_seconds``, questions asked, LLM calls where known).

Each round is one :class:`MiningRound` (a line of ``mining.jsonl`` in the run folder). The
indices see what was activated at the next question: the benchmark's index set is built
without a background thread, so each retrieval first applies the store's writes.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from agents.learn.gate import GateOptions, PipelineFactory, RegressionGate
from agents.learn.gate_held import HeldSet, held_set
from agents.learn.mine import activate, candidates, mine_labeled
from agents.learn.mine.labeled import MiningReport, labeled_experiences
from agents.learn.mine.pairer import Pairer
from agents.learn.mine.templates import MIN_SUPPORT as TEMPLATE_SUPPORT
from agents.learn.mine.unlabeled import VoteAsker, VoteThresholds, mine_unlabeled
from bench.metrics.exact import execution_accuracy
from indices.embeddings import Embedder
from kb.store import KnowledgeStore
from kb.target.database import Database
from ukf import BaseUKF, ExperienceUKF

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StreamMiningOptions:
    """When and how a stream mines.

    Attributes:
        every: questions seen between two rounds (0: no mining).
        gate: activate through the regression gate (False: activate every candidate).
        gate_held: held questions per gate run, at most.
        gate_batch: candidates the gate decides together (bisected when they break one).
        vote: when an unlabeled question's vote is sure enough to mine from (its
            ``samples`` are the candidates each vote draws).
        template_support: fewest labeled questions sharing one slotted SQL that make a
            query template (0: no templates).
        llm_pairer: pair the phrases alignment leaves with the system's model (one call per
            experience that has any; the server's ``llm_pairer``), labeled and unlabeled.
    """

    every: int = 0
    gate: bool = False
    gate_held: int = 20
    gate_batch: int = 8
    vote: VoteThresholds = field(default_factory=VoteThresholds)
    template_support: int = TEMPLATE_SUPPORT
    llm_pairer: bool = False

    def __post_init__(self) -> None:
        if self.template_support < 0:
            raise ValueError(f"template support {self.template_support} must be >= 0")
        if self.every < 0 or self.gate_held < 1 or self.gate_batch < 1:
            raise ValueError(
                f"mine every {self.every}, gate held {self.gate_held}, batch {self.gate_batch}:"
                " every must be >= 0, held and batch >= 1"
            )


@dataclass
class GateRun:
    """One gate run of a round: a mining job's candidates of one database."""

    job_id: str
    database: str
    candidates: int
    held: int
    targeted: int  # held questions saying a candidate's phrase (0: nothing relevant measured)
    baseline_ex: float
    final_ex: float
    activated: int
    rejected: int
    evaluations: int
    asked: int
    llm_calls: int | None
    seconds: float


@dataclass
class MiningRound:
    """What one mining round did (one line of ``mining.jsonl``)."""

    round: int
    phase: str  # "learn-split" or "stream"
    after_question: int  # questions of the run seen before the round
    job_id: str
    experiences: int = 0  # observed since the last round and mined
    mined_experiences: int = 0
    skipped: int = 0
    mined: dict[str, int] = field(default_factory=dict)  # entries by kind
    dropped: dict[str, int] = field(default_factory=dict)
    known: int = 0  # facts the knowledge base already had (not learned again)
    unpaired: int = 0  # facts no question phrase was paired with
    pairer_calls: int = 0  # the LLM pairer's calls (options.llm_pairer)
    inserted: int = 0  # new candidates
    activated: int = 0
    rejected: int = 0
    waiting: int = 0  # candidates still undecided after the round (gate: no held question)
    vote: dict[str, Any] | None = None  # unlabeled: asked/kept/refused
    gated: bool = False
    gate_runs: list[GateRun] = field(default_factory=list)
    mine_seconds: float = 0.0
    gate_seconds: float = 0.0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class StreamMiner:
    """Mines what a stream observed, round by round (module docstring).

    Args:
        store: the system's knowledge store (experiences in, candidates out).
        options: when and how to mine.
        targets: database name → its read-only target (values checked, gold SQL run).
        pipeline_factory: database name → the gate's ``(store, retriever) -> pipeline``
            (needed with ``options.gate``).
        embedder: the system's embedder (the gate's scratch indices reuse its vectors).
        vote_ask: answers an unlabeled experience's question with n samples, for the vote
            (None: unlabeled experiences are not mined).
        pairer: pairs what alignment leaves (``options.llm_pairer``: the system's model).
    """

    def __init__(
        self,
        store: KnowledgeStore,
        options: StreamMiningOptions,
        *,
        targets: Callable[[], dict[str, Database]],
        pipeline_factory: Callable[[str], PipelineFactory] | None = None,
        embedder: Embedder | None = None,
        vote_ask: VoteAsker | None = None,
        pairer: Pairer | None = None,
    ) -> None:
        if options.gate and pipeline_factory is None:
            raise ValueError("the mining gate needs the system's pipelines (pipeline_factory)")
        self.store, self.options = store, options
        self._targets, self._factory = targets, pipeline_factory
        self.embedder, self.vote_ask, self.pairer = embedder, vote_ask, pairer
        self._observed: list[ExperienceUKF] = []
        self._waiting_jobs: list[str] = []
        self.rounds = 0

    def observe(self, experience: ExperienceUKF) -> None:
        """An experience the system stored; mined at the next round."""
        self._observed.append(experience)

    def mine(self, *, phase: str = "stream", after_question: int = 0) -> MiningRound:
        """Mine what was observed since the last round, then activate (or gate) it."""
        started = time.perf_counter()
        self.rounds += 1
        job_id = f"stream-{self.rounds}"
        todo, self._observed = self._observed, []
        record = MiningRound(self.rounds, phase, after_question, job_id)
        labeled = [e for e in todo if e.labeled or e.verified]
        unlabeled = [e for e in todo if not (e.labeled or e.verified)]
        reports = []
        if labeled:
            targets = self._targets()
            reports.append(
                mine_labeled(
                    self.store,
                    labeled,
                    job_id=job_id,
                    targets=targets,
                    pairer=self.pairer,
                    template_support=self.options.template_support,
                )
            )
        if unlabeled and self.vote_ask is not None:
            targets = self._targets()
            report = mine_unlabeled(
                self.store,
                unlabeled,
                ask=self.vote_ask,
                thresholds=self.options.vote,
                job_id=job_id,
                targets=targets,
                databases=list(targets),
                pairer=self.pairer,
            )
            reports.append(report)
        self._count(record, reports)
        record.mine_seconds = round(time.perf_counter() - started, 3)
        if self.options.gate:
            record.gated = True
            self._waiting_jobs.append(job_id)
            self._gate_waiting(record)
        else:
            inserted = [c.id for c in candidates(self.store, job_id=job_id)]
            record.activated = len(activate(self.store, inserted, by="bench-stream"))
        record.waiting = len(candidates(self.store))
        record.seconds = round(time.perf_counter() - started, 3)
        record.gate_seconds = round(record.seconds - record.mine_seconds, 3)
        log.info(
            "mining round %d (%s, after %d questions): %d experiences, %d new candidates, "
            "%d activated, %d rejected, %d waiting, %.1f s",
            record.round,
            phase,
            after_question,
            record.experiences,
            record.inserted,
            record.activated,
            record.rejected,
            record.waiting,
            record.seconds,
        )
        return record

    def _count(self, record: MiningRound, reports: Sequence[MiningReport]) -> None:
        for report in reports:
            record.experiences += report.experiences
            record.mined_experiences += report.mined_experiences
            record.skipped += len(report.skipped)
            record.inserted += len(report.candidate_ids)
            record.known += report.known
            record.unpaired += report.unpaired
            record.pairer_calls += report.pairer_calls
            for kind, n in report.mined.items():
                record.mined[kind] = record.mined.get(kind, 0) + n
            for reason, n in report.dropped.items():
                record.dropped[reason] = record.dropped.get(reason, 0) + n
            if report.vote is not None:
                record.vote = dict(report.vote)

    def _gate_waiting(self, record: MiningRound) -> None:
        """Gate every job's undecided candidates, oldest job first, per database."""
        still_waiting = []
        for job_id in self._waiting_jobs:
            by_database: dict[str, list[BaseUKF]] = defaultdict(list)
            for candidate in candidates(self.store, job_id=job_id):
                by_database[_database_of(candidate)].append(candidate)
            for database, group in by_database.items():
                run = self._gate(job_id, database, group)
                if run is None:
                    continue
                record.gate_runs.append(run)
                record.activated += run.activated
                record.rejected += run.rejected
            if candidates(self.store, job_id=job_id):
                still_waiting.append(job_id)
        self._waiting_jobs = still_waiting

    def _gate(self, job_id: str, database: str, group: list[BaseUKF]) -> GateRun | None:
        target = self._targets().get(database)
        held = self._held(database, group)
        if target is None or not held.experiences or self._factory is None:
            return None
        gate = RegressionGate(
            self._factory(database),
            held.experiences,
            target,
            embedder=self.embedder,
            options=GateOptions(batch_size=self.options.gate_batch),
            same_result=execution_accuracy,
        )
        report = gate.run(self.store, group)
        return GateRun(
            job_id=job_id,
            database=database,
            candidates=len(group),
            held=report.held,
            targeted=held.targeted,
            baseline_ex=round(report.baseline_ex, 4),
            final_ex=round(report.final_ex, 4),
            activated=len(report.activated),
            rejected=len(report.rejected),
            evaluations=report.evaluations,
            asked=report.asked,
            llm_calls=report.llm_calls,
            seconds=round(report.seconds, 3),
        )

    def _held(self, database: str, group: list[BaseUKF]) -> HeldSet:
        """Labeled experiences of ``database`` observed so far that none of ``group`` was
        mined from, at most ``gate_held``, those saying a candidate's phrase first."""
        found = [e for e in labeled_experiences(self.store, database=database) if e.sql]
        return held_set(found, group, self.options.gate_held)


def _database_of(entry: BaseUKF) -> str:
    return next(iter(entry.tag_values("DATABASE")), "")
