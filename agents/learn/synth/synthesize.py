"""``synthesize``: verified experiences and the profiled schema → new verified pairs.

For each source experience (labeled or verified, with SQL; see
:func:`agents.learn.synth.records.synthesis_sources`) the transforms make variants of its SQL
(:mod:`~agents.learn.synth.compose`, :mod:`~agents.learn.synth.decompose`,
:mod:`~agents.learn.synth.vary`), interleaved and capped at ``per_source``. Each variant
gets exactly one outcome, counted per transform in the :class:`SynthesisReport`:

- ``known``: its SQL is an experience's of the database already, or it was tried before
  (in this run, or dropped by an earlier one: remembered on its source);
- ``failed``: it does not run (read-only, on the database's target);
- ``degenerate``: it runs but says nothing (:func:`agents.learn.synth.results.degenerate`),
  or (compose, vary) gives the source's result again;
- ``question_failed``: the LLM wrote no usable question;
- ``backcheck_failed``: the question, answered by the chain (``ask``), does not give the
  variant's result (compared as BIRD's EX compares);
- ``stored``: kept as a synthetic experience (:mod:`agents.learn.synth.records`).

``ran`` counts the variants that ran (``generated - known - failed``). The run stops once
``limit`` pairs are stored. A cancelled run (or one whose ``progress`` raised) keeps the
pairs it stored and remembers what it dropped, then raises :class:`LLMCancelledError` (the
``progress`` callback's error).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from itertools import chain, zip_longest
from typing import Any

from agents.answer import Answer
from agents.learn.mine.labeled import Progress
from agents.learn.mine.schema_view import SchemaView
from agents.learn.synth import records
from agents.learn.synth.compose import compose
from agents.learn.synth.decompose import decompose
from agents.learn.synth.question import QuestionError, QuestionWriter
from agents.learn.synth.results import degenerate, run, same_result
from agents.learn.synth.variants import TRANSFORMS, SynthSchema, Variant, sql_key
from agents.learn.synth.vary import vary
from agents.llm.base import Cancellation, current_cancellation
from kb.store import KnowledgeStore
from kb.target.database import Database
from kb.target.results import Results
from kb.target.sql_guard import sqlglot_dialect
from ukf import ExperienceUKF

log = logging.getLogger(__name__)

SynthAsker = Callable[[ExperienceUKF], Answer]
"""Answers a (not stored) synthetic experience's question through the chain, executed and
not logged."""
OUTCOMES = ("known", "failed", "degenerate", "question_failed", "backcheck_failed", "stored")
EXAMPLES_KEPT = 20


@dataclass(frozen=True)
class SynthOptions:
    """What a synthesis run tries: ``transforms`` (a subset of
    :data:`~agents.learn.synth.variants.TRANSFORMS`), variants per source at most
    (``per_source``), pairs stored at most (``limit``; None: no limit), ``retry`` (try again
    the variants remembered as dropped), and how often the memory is written
    (``checkpoint`` sources)."""

    transforms: tuple[str, ...] = TRANSFORMS
    per_source: int = 6
    limit: int | None = None
    retry: bool = False
    checkpoint: int = 10

    def __post_init__(self) -> None:
        unknown = [t for t in self.transforms if t not in TRANSFORMS]
        if unknown or not self.transforms:
            raise ValueError(f"unknown transforms {unknown or '(none)'}; choose from {TRANSFORMS}")
        if self.per_source < 1:
            raise ValueError(f"per_source must be at least 1, got {self.per_source}")
        if self.limit is not None and self.limit < 0:
            raise ValueError(f"limit must be at least 0, got {self.limit}")


@dataclass
class SynthesisReport:
    """What a run did: sources read, outcomes per transform, the stored ids, and a few
    dropped variants with their reasons."""

    job_id: str
    sources: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    stored_ids: list[str] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)
    limit_reached: bool = False

    def count(self, transform: str, outcome: str) -> None:
        row = self.counts.setdefault(transform, {k: 0 for k in ("generated", "ran", *OUTCOMES)})
        row[outcome] += 1

    def totals(self) -> dict[str, int]:
        keys = ("generated", "ran", *OUTCOMES)
        return {k: sum(row[k] for row in self.counts.values()) for k in keys}

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "sources": self.sources,
            "skipped": dict(self.skipped),
            "totals": self.totals(),
            "by_transform": {t: dict(row) for t, row in sorted(self.counts.items())},
            "stored_ids": list(self.stored_ids),
            "dropped": list(self.dropped),
            "limit_reached": self.limit_reached,
        }

    def summary(self) -> str:
        t = self.totals()
        return (
            f"synthesis: {self.sources} sources, {t['generated']} variants: {t['known']} known, "
            f"{t['failed']} failed, {t['degenerate']} degenerate, {t['question_failed']} "
            f"without a question, {t['backcheck_failed']} failed the back-check, "
            f"{t['stored']} stored"
        )


def variants_of(sql: str, schema: SynthSchema, options: SynthOptions) -> list[Variant]:
    """The variants of ``sql``: each transform's, interleaved, at most ``per_source``."""
    made: list[list[Variant]] = []
    for transform in options.transforms:
        if transform == "decompose":
            made.append(decompose(sql, schema))
        elif transform == "vary":
            made.append(vary(sql, schema))
        else:
            made.append(compose(sql, schema, transform))
    interleaved = [v for v in chain.from_iterable(zip_longest(*made)) if v is not None]
    return interleaved[: options.per_source]


class _Run:
    """One synthesis run over the sources of one database."""

    def __init__(
        self,
        store: KnowledgeStore,
        database_name: str,
        target: Database,
        writer: QuestionWriter,
        ask: SynthAsker,
        report: SynthesisReport,
        options: SynthOptions,
        token: Cancellation | None,
    ) -> None:
        self.store, self.database_name, self.target = store, database_name, target
        self.writer, self.ask, self.report, self.options = writer, ask, report, options
        self.token = token
        self.dialect = sqlglot_dialect(target.dialect)
        self.schema = SynthSchema(SchemaView(store, database_name, target=target), self.dialect)
        self.known = records.known_keys(store, database_name, self.dialect)
        self.notes: dict[str, dict[str, str]] = {}
        self.tried: set[str] = set()

    def full(self) -> bool:
        limit = self.options.limit
        return limit is not None and len(self.report.stored_ids) >= limit

    def source(self, source: ExperienceUKF) -> None:
        assert source.sql is not None
        memory = {} if self.options.retry else records.remembered(source)
        original = run(self.target, source.sql)
        if not original.ok:
            skipped = self.report.skipped
            skipped["source SQL fails"] = skipped.get("source SQL fails", 0) + 1
            return
        for variant in variants_of(source.sql, self.schema, self.options):
            if self.full():
                self.report.limit_reached = True
                return
            self.report.count(variant.transform, "generated")
            key = sql_key(variant.sql, self.dialect)
            if key in self.known or key in self.tried or key in memory:
                self.report.count(variant.transform, "known")
                continue
            outcome, reason = self._try(source, variant, key, original)
            self.report.count(variant.transform, outcome)
            if outcome != "stored":
                self.tried.add(key)  # another source's same variant is not tried again
                self.notes.setdefault(source.id, {})[key] = outcome
                if len(self.report.dropped) < EXAMPLES_KEPT:
                    self.report.dropped.append(
                        {
                            "transform": variant.transform,
                            "sql": variant.sql,
                            "outcome": outcome,
                            "reason": reason,
                            "source": source.id,
                        }
                    )

    def _try(
        self, source: ExperienceUKF, variant: Variant, key: str, original: Results
    ) -> tuple[str, str]:
        results = run(self.target, variant.sql)
        if not results.ok:
            return "failed", str(results.error)
        self.report.count(variant.transform, "ran")
        reason = degenerate(results)
        if reason is None and variant.transform != "decompose" and same_result(results, original):
            reason = "the source's result unchanged"
        if reason is not None:
            return "degenerate", reason
        self._check()
        try:
            question = self.writer.write(source.question, variant, list(results.columns))
        except QuestionError as exc:
            return "question_failed", exc.reason
        pair_of = partial(
            records.synthetic_pair,
            source,
            variant,
            question,
            results,
            database=self.database_name,
            dialect=self.dialect,
            key=key,
        )
        self._check()
        answer = self.ask(pair_of())
        self._check()
        if not answer.sql:
            return "backcheck_failed", f"the chain gave no SQL: {answer.error}"
        answered = run(self.target, answer.sql)
        if not answered.ok or not same_result(answered, results):
            why = (
                answered.error or f"{answered.row_count} rows, not the {results.row_count} expected"
            )
            return "backcheck_failed", f"another result: {why}"
        pair = pair_of(
            back_check={"sql": answer.sql, "rows": answered.row_count, "matched": True},
            job_id=self.report.job_id,
        )
        self.store.upsert(pair)
        self.known.add(key)
        self.report.stored_ids.append(pair.id)
        log.info("synthesis: stored %r (%s of %s)", question, variant.transform, source.id)
        return "stored", ""

    def _check(self) -> None:
        if self.token is not None:
            self.token.raise_if_cancelled("query synthesis")


def synthesize(
    store: KnowledgeStore,
    sources: Iterable[ExperienceUKF],
    *,
    targets: Mapping[str, Database],
    writer: QuestionWriter,
    ask: SynthAsker,
    options: SynthOptions | None = None,
    job_id: str | None = None,
    progress: Progress | None = None,
    cancellation: Cancellation | None = None,
) -> SynthesisReport:
    """Synthesize pairs from ``sources`` (see the module docstring).

    Args:
        targets: database name → its read-only target; a source of another database is
            skipped (counted in ``skipped``).
        writer: writes each variant's question.
        ask: answers a synthetic question through the chain (the back-check).
        progress: called with (done, total) after each source.
        cancellation: default the current token (:func:`agents.llm.base.cancellation_scope`).
    """
    options = options or SynthOptions()
    report = SynthesisReport(job_id or uuid.uuid4().hex[:12])
    token = cancellation if cancellation is not None else current_cancellation()
    grouped = records.by_database(s for s in sources if not records.is_synthetic(s) and s.sql)
    without = [d for d in grouped if d not in targets]
    if without:
        report.skipped["no target"] = sum(len(grouped.pop(d)) for d in without)
    total, done = sum(len(g) for g in grouped.values()), 0
    report.sources = total + report.skipped.get("no target", 0)
    for database, group in sorted(grouped.items()):
        state = _Run(store, database, targets[database], writer, ask, report, options, token)
        try:
            for index, source in enumerate(group, 1):
                if state.full():
                    report.limit_reached = True
                    break
                state.source(source)
                done += 1
                if index % options.checkpoint == 0:
                    records.remember(store, state.notes)
                if progress is not None:
                    progress(done, total)
        finally:  # stopped or not, what was dropped is remembered
            records.remember(store, state.notes)
        if report.limit_reached:
            break
    log.info(report.summary())
    return report
