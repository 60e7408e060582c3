"""The regression gate after a mining run, as the ``mine`` job and ``almanac mine --gate``
run it (:class:`agents.learn.gate.RegressionGate` does the measuring).

- **Held set** (:func:`agents.learn.gate_held.held_set`): verified experiences of the mined
  database that no candidate was mined from (not among the candidates' ``parents``), at most
  ``size`` of them, *targeted*: first the questions that say a candidate's phrase (its name,
  synonyms, value; a join's tables), round-robin over the candidates, then the others; each
  list in the order of a SHA-256 of the ids (a fixed pseudo-random order: the same store
  gives the same held set, whatever order the experiences were written in). How many held
  questions are targeted is logged and given to ``progress`` before the gate starts: with
  none, the gate can only re-ask questions the candidates barely touch.
- **Pipeline**: built as the server's ask path builds it (the ask tiers, the target, the
  pipeline options), on the gate's scratch copy; each LLM call is a background turn at the
  server's LLM gate (:class:`server.llm_factory.BackgroundLLM`), so questions keep priority.
- **EX**: ``bench.metrics.exact.execution_accuracy``, as the benchmarks count it.
- **Embedder**: the server's own (the one its indices use): it caches vectors by text (in
  memory and in the on-disk embedding store), so the scratch copy's indices read the live
  store's vectors instead of embedding the knowledge base again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from agents.gate_pipeline import pipeline_factory
from agents.learn.gate import GateOptions, GateReport, Progress, RegressionGate
from agents.learn.gate_held import HeldSet, held_set
from agents.learn.mine.labeled import labeled_experiences
from agents.llm.base import Cancellation
from agents.pipeline import ModelTier
from agents.pipeline_options import PipelineOptions
from bench.metrics.exact import execution_accuracy
from indices.embeddings import Embedder
from kb.store import KnowledgeStore
from kb.target.database import Database
from ukf import BaseUKF

log = logging.getLogger(__name__)

GATE_ACTION = "mine.gate"
"""The audit action of the gate's decisions (one row for the activated, one for the rejected)."""
DEFAULT_HELD = 60
DEFAULT_BATCH = 8


def held_sample(
    store: KnowledgeStore, database: str | None, candidates: Sequence[BaseUKF], size: int
) -> HeldSet:
    """Up to ``size`` verified experiences of ``database`` the ``candidates`` were not mined
    from, those saying a candidate's phrase first (see the module docstring)."""
    verified = [e for e in labeled_experiences(store, database=database) if e.verified]
    return held_set(verified, candidates, size)


def run_gate(
    store: KnowledgeStore,
    candidate_ids: Sequence[str],
    *,
    tiers: list[ModelTier],
    database: Database,
    database_name: str,
    embedder: Embedder | None,
    held: int = DEFAULT_HELD,
    batch: int = DEFAULT_BATCH,
    options: PipelineOptions | None = None,
    progress: Progress | None = None,
    cancellation: Cancellation | None = None,
) -> GateReport:
    """Gate the candidates ``candidate_ids`` of ``store`` on a held sample (module docstring)
    and write the decisions; the report says what was measured and decided."""
    candidates = list(store.get_many(list(candidate_ids)).values())
    sample = held_sample(store, database_name, candidates, held)
    note = (
        f"{len(sample.experiences)} held question(s), {sample.targeted} saying a candidate's "
        f"phrase, for {len(candidates)} candidate(s)"
    )
    log.info("mining gate on %s: %s", database_name, note)
    if progress is not None:
        progress(0.0, note)
    gate = RegressionGate(
        pipeline_factory(tiers, database, database_name, options),
        sample.experiences,
        database,
        embedder=embedder,
        options=GateOptions(batch_size=batch),
        same_result=execution_accuracy,
        progress=progress,
        cancellation=cancellation,
    )
    report = gate.run(store, candidates)
    report.targeted = sample.targeted
    return report


def summary(report: GateReport) -> list[str]:
    """A few lines for people: EX before and after, what was activated and rejected."""
    lines = [
        f"gate: {len(report.activated)} activated, {len(report.rejected)} rejected on "
        f"{report.held} held question(s); EX {report.baseline_ex:.3f} -> {report.final_ex:.3f}"
        f" ({report.evaluations} evaluations, {report.asked} questions asked, "
        f"{report.seconds:.1f} s)"
    ]
    if report.cancelled:
        lines.append("gate: cancelled; undecided candidates stay candidates")
    for decision in report.decisions:
        verb = "activated" if decision.activated else "rejected"
        lines.append(
            f"  {verb} {', '.join(decision.ids)}: EX {decision.ex_without:.3f} -> "
            f"{decision.ex_with:.3f}" + (f", broke {decision.broken}" if decision.broken else "")
        )
    return lines
