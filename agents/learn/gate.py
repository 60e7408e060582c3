"""The regression gate: mined candidates become active only where execution accuracy (EX)
on a held set of verified questions does not drop.

:class:`RegressionGate` replays the held questions on a *scratch copy* of the store
(:mod:`agents.learn.gate_scratch`): first without the candidates (the baseline), then with
each batch of candidates switched on. The live store is only read until a decision is made;
then the decided entries get ``metadata["mining"]["gate"]`` (the measured effect; the
records measured and reported are in :mod:`agents.learn.gate_report`) and are
activated (:func:`~agents.learn.mine.candidates.activate`) or rejected
(:func:`~agents.learn.mine.candidates.reject`) there.

Decisions:

- a group of candidates *passes* when it breaks no held question: no question answered right
  at the baseline is answered wrong with the group on (so EX cannot drop; a group that fixes
  one question and breaks another is not let through on balance);
- batches of at most ``per_entry_up_to`` entries are measured entry by entry; larger batches
  by bisection: the whole batch is measured, and when it breaks something it is split in
  halves, each half measured, recursing to single entries; the halves that pass are
  activated, single entries that break something are rejected. One bad entry among ``n``
  costs about ``2·log2(n)`` evaluations instead of ``n``;
- batches run in order, and what a batch activated is on for the next ones (the baseline
  moves with it), so each batch is measured against what ``ask`` will have. Groups that pass
  alone but break a question together are not undone; the report lists such questions
  (``combined_broken``).

The held set leaves out every experience a candidate was mined from (its ``parents``): a
fact is never judged on the question it came from. In the copy the held experiences are
hidden, so a question is not answered by its own worked example. The callers pick it with
:func:`agents.learn.gate_held.held_set`: the questions saying a candidate's phrase first,
since those are the ones a candidate's prompt changes (below).

Only questions whose prompt changes are re-asked (the shortcut, and why it is exact): for
each held question the gate runs retrieval only (the pipeline's RAG step, no LLM) and takes a
fingerprint of what the prompt is built from (schema slice, hints, worked examples, summary,
dates, resolved phrases, explored tables). The answer to a fingerprint is remembered: a
question whose fingerprint is one already answered is not asked again, since the same prompt
to the same model gives the same SQL (greedy decoding: ``n=1``, the gate's default). A
candidate whose synonym or value the string index matches in the question, or that the
retriever ranks in, changes the fingerprint, so that question is asked; every other question
costs one retrieval.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from agents.answer import Answer
from agents.learn.gate_report import (
    Evaluation,
    GateDecision,
    GateOptions,
    GateReport,
    HeldQuestion,
)
from agents.learn.gate_scratch import IndexFactory, ScratchStore
from agents.learn.mine.candidates import GATE as GATE_BY
from agents.learn.mine.candidates import activate, is_undecided, mining_note, reject
from agents.llm.base import Cancellation, LLMCancelledError, cancellation_scope
from indices.embeddings import Embedder
from indices.retriever import Retriever
from kb.store import KnowledgeStore
from kb.target.database import Database
from ukf import MINING_KEY, BaseUKF, ExperienceUKF, QueryContext

Rows = Sequence[Sequence[Any]]
Progress = Callable[[float, str], None]
GATE = "gate"
__all__ = [
    "AskingPipeline",
    "Evaluation",
    "GateCancelled",
    "GateDecision",
    "GateOptions",
    "GateReport",
    "HeldQuestion",
    "Progress",
    "RegressionGate",
    "same_rows",
]


class AskingPipeline(Protocol):
    """What the gate needs of :class:`agents.pipeline.Pipeline`."""

    rag: Any  # .run(question, context) -> RagContext
    database_name: str

    def ask(self, question: str, context: QueryContext | None = None) -> Answer: ...


PipelineFactory = Callable[[KnowledgeStore, Callable[[], Retriever]], AskingPipeline]


class GateCancelled(Exception):
    """The gate's cancellation was set; decisions made so far are written."""


def same_rows(predicted: Rows, gold: Rows) -> bool:
    """EX as BIRD counts it: the same set of rows (order and duplicates ignored)."""
    return {tuple(r) for r in predicted} == {tuple(r) for r in gold}


class RegressionGate:
    """Decides candidates by their measured effect on held questions (module docstring).

    Args:
        pipeline_factory: ``(store, retriever) -> pipeline`` answering on the target; the
            gate passes the scratch copy and its retriever.
        held: the verified questions to replay (``HeldQuestion`` or labeled experiences).
        database: the target database (gold SQL runs here, read-only).
        embedder: for the scratch copy's indices (ignored with ``index_factory``).
        options: batching (:class:`GateOptions`).
        same_result: EX of a predicted result against the gold one (bench passes
            ``bench.metrics.execution_accuracy``).
        progress: ``(fraction, message)`` callback.
        cancellation: stops the gate between questions and inside an LLM call.
        llm_calls: counts the LLM calls made so far (for the report), when known.
        index_factory: builds the scratch copy's indices.
    """

    def __init__(
        self,
        pipeline_factory: PipelineFactory,
        held: Sequence[HeldQuestion | ExperienceUKF],
        database: Database,
        *,
        embedder: Embedder | None = None,
        options: GateOptions | None = None,
        same_result: Callable[[Rows, Rows], bool] = same_rows,
        progress: Progress | None = None,
        cancellation: Cancellation | None = None,
        llm_calls: Callable[[], int] | None = None,
        index_factory: IndexFactory | None = None,
    ) -> None:
        self.pipeline_factory, self.database = pipeline_factory, database
        self.held = [h if isinstance(h, HeldQuestion) else HeldQuestion.of(h) for h in held]
        self.embedder, self.options = embedder, options or GateOptions()
        self.same_result = same_result
        self.progress = progress or (lambda _f, _m: None)
        self.cancellation = cancellation or Cancellation()
        self.llm_calls, self.index_factory = llm_calls, index_factory

    # ------------------------------------------------------------------ the run
    def run(self, store: KnowledgeStore, candidates: Sequence[BaseUKF]) -> GateReport:
        """Gate ``candidates`` (entries of ``store`` awaiting a decision) and write the
        decisions to ``store``; the report says what was measured and decided."""
        started, calls0 = time.perf_counter(), self._calls()
        report = GateReport()
        pending = [c for c in candidates if is_undecided(c)]
        sources = {p for c in pending for p in c.parents}
        held = [h for h in self.held if h.id not in sources]
        report.excluded = [h.id for h in self.held if h.id in sources]
        report.held = len(held)
        if not pending or not held:
            report.seconds = time.perf_counter() - started
            return report
        self.progress(0.0, f"copying the store for {len(pending)} candidates")
        scratch = ScratchStore(
            store,
            self.embedder,
            hidden=[h.id for h in self.held],
            index_factory=self.index_factory,
        )
        report.copy_seconds, report.index_seconds = scratch.copy_seconds, scratch.index_seconds
        try:
            run = _GateRun(self, scratch, held, report)
            run.decide_all(pending, store)
        except (GateCancelled, LLMCancelledError):
            report.cancelled = True
        finally:
            scratch.close()
            report.llm_calls = None if calls0 is None else (self._calls() or 0) - calls0
            report.seconds = time.perf_counter() - started
        return report

    def _calls(self) -> int | None:
        return self.llm_calls() if self.llm_calls else None


class _GateRun:
    """One run's state: the scratch copy, its pipeline, the gold results and the answers
    remembered per (question, prompt fingerprint)."""

    def __init__(
        self,
        gate: RegressionGate,
        scratch: ScratchStore,
        held: list[HeldQuestion],
        report: GateReport,
    ) -> None:
        self.gate, self.scratch, self.held, self.report = gate, scratch, held, report
        self.pipeline = gate.pipeline_factory(scratch.store, scratch.indices.retriever)
        self.gold = {h.id: self._gold(h) for h in held}
        self.answers: dict[tuple[str, str], bool] = {}
        self.on: list[str] = []  # activated by this run
        self.done = 0.0  # the fraction reported with each evaluation

    def _gold(self, held: HeldQuestion) -> Rows | None:
        result = self.gate.database.execute(held.sql, max_rows=self.gate.options.max_rows)
        return None if result.error else result.rows

    def decide_all(self, pending: list[BaseUKF], store: KnowledgeStore) -> None:
        size = self.gate.options.batch_size
        batches = [pending[i : i + size] for i in range(0, len(pending), size)]
        baseline = self.evaluate([])
        self.report.baseline_ex = self.report.final_ex = baseline.ex
        for n, batch in enumerate(batches):
            self.done = (n + 1) / (len(batches) + 1)
            self.gate.progress(
                self.done, f"batch {n + 1} of {len(batches)}: {len(batch)} candidate(s)"
            )
            ids = [c.id for c in batch]
            if len(ids) <= self.gate.options.per_entry_up_to:
                decisions = [self.decide([uid], baseline) for uid in ids]
            else:
                decisions = self.bisect(ids, baseline)
            self.write(store, decisions)
            activated = [uid for d in decisions if d.activated for uid in d.ids]
            if not activated:
                continue  # nothing changed: the baseline stands
            self.on += activated
            before, baseline = baseline, self.evaluate([])
            self.report.combined_broken += [
                q for q, ok in baseline.correct.items() if before.correct[q] and not ok
            ]
            self.report.final_ex = baseline.ex
        self.gate.progress(1.0, f"{len(self.report.activated)} activated")

    def bisect(self, ids: list[str], baseline: Evaluation) -> list[GateDecision]:
        decision = self.decide(ids, baseline)
        if decision.activated or len(ids) == 1:
            return [decision]
        half = len(ids) // 2
        return self.bisect(ids[:half], baseline) + self.bisect(ids[half:], baseline)

    def decide(self, ids: list[str], baseline: Evaluation) -> GateDecision:
        measured = self.evaluate(ids)
        fixed = [q for q, ok in measured.correct.items() if ok and not baseline.correct[q]]
        broken = [q for q, ok in measured.correct.items() if baseline.correct[q] and not ok]
        return GateDecision(
            ids=ids,
            activated=not broken,
            ex_without=baseline.ex,
            ex_with=measured.ex,
            fixed=fixed,
            broken=broken,
            asked=measured.asked,
            seconds=measured.seconds,
        )

    def evaluate(self, ids: list[str]) -> Evaluation:
        """The held questions answered with ``ids`` and this run's activations on."""
        started = time.perf_counter()
        self.scratch.switch([*self.on, *ids])
        correct: dict[str, bool] = {}
        asked = 0
        for held in self.held:
            if self.gate.cancellation.cancelled:
                raise GateCancelled(self.gate.cancellation.reason)
            key = (held.id, self.fingerprint(held))
            if key not in self.answers:
                self.answers[key] = self.ask(held)
                asked += 1
            correct[held.id] = self.answers[key]
        self.report.evaluations += 1
        self.report.asked += asked
        evaluation = Evaluation(ids, correct, asked, time.perf_counter() - started)
        self.gate.progress(
            self.done,
            f"evaluation {self.report.evaluations} ({len(ids)} candidate(s) on): "
            f"EX {evaluation.ex:.3f}, {asked}/{len(self.held)} re-asked",
        )
        return evaluation

    def fingerprint(self, held: HeldQuestion) -> str:
        """What the prompt for ``held`` is built from, hashed (see the module docstring)."""
        self.report.retrievals += 1
        context = held.context.on(self.pipeline.database_name)
        rag = self.pipeline.rag.run(held.question, context)
        parts = {
            "schema": rag.schema,
            "hints": rag.hints,
            "examples": [e.id for e in rag.examples],
            "summary": rag.summary,
            "dates": rag.dates,
            "resolved": rag.resolved,
            "explored": rag.explored,
            "tables": rag.tables,
        }
        text = json.dumps(parts, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def ask(self, held: HeldQuestion) -> bool:
        with cancellation_scope(self.gate.cancellation):
            answer = self.pipeline.ask(held.question, held.context)
        self.scratch.forget(answer.experience_id)
        gold = self.gold[held.id]
        if gold is None or answer.error or not answer.sql:
            return False
        # the answer's SQL is run again here: an answer holds at most max_rows rows
        result = self.gate.database.execute(answer.sql, max_rows=self.gate.options.max_rows)
        return result.error is None and self.gate.same_result(result.rows, gold)

    def write(self, store: KnowledgeStore, decisions: list[GateDecision]) -> None:
        """Record each decision's effect on its entries, then activate or reject them."""
        held = len(self.held)
        for decision in decisions:
            entries = [e for e in store.get_many(decision.ids).values() if is_undecided(e)]
            noted = [
                e.clone(
                    metadata={
                        **e.metadata,
                        MINING_KEY: {**mining_note(e), GATE: decision.note(held)},
                    }
                )
                for e in entries
            ]
            if noted:
                store.upsert_many(noted)
            decide = activate if decision.activated else reject
            decide(store, [e.id for e in entries], by=GATE_BY)
            self.report.decisions.append(decision)
