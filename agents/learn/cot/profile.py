"""``profile_cot``: checked CoT for the verified experiences that have none yet.

Each experience with a trusted SQL (labeled or verified, :func:`cot_experiences`) gets a
step-by-step explanation from a :class:`agents.learn.cot.writer.CotWriter`, checked against
its SQL and the profiled schema of its database; the outcome is stored on the experience
(:mod:`agents.learn.cot.record`: the steps when they pass, only the verdict when not).

Running it again skips an experience that has a passing CoT for its current SQL, and one
whose SQL the same model already failed on (``retry_failed`` asks again). With
``with_knowledge`` the writer is also shown the knowledge behind the filters an experience's
question does not name (:class:`agents.learn.cot.knowledge.CotKnowledgeLookup`; the record
keeps those entries' ids; off by default: with the 1.5B as teacher it lowered AutoFin's pass
share). The records are written every ``checkpoint`` experiences and when the run stops
(cancelled, or any error), so a run that resumes starts where the last write left off. A
write never overwrites what another writer changed on the same experience since it was read
(feedback, a corrected SQL): it is a compare-and-set
(:meth:`kb.store.KnowledgeStore.compare_and_set`), read again and retried on a change. The
:class:`CotReport` counts what was written, passed, failed (by reason) and skipped (by
reason).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from agents.learn.cot.check import CotVerdict
from agents.learn.cot.knowledge import CotKnowledge, CotKnowledgeLookup
from agents.learn.cot.record import COT, cot_record, sql_hash, with_cot
from agents.learn.cot.sql_parts import CotCheckError, read_sql
from agents.learn.cot.writer import CotAttempt, CotWriter
from agents.learn.mine.schema_view import SchemaView
from agents.llm.base import Cancellation, LLMCancelledError, current_cancellation
from kb.store import KnowledgeStore
from ukf import BaseUKF, ExperienceUKF

log = logging.getLogger(__name__)
CAS_ATTEMPTS = 5
"""Reads and compare-and-set writes of one batch of records before giving up on those whose
experience changes every time (they are asked about again on the next run)."""
Progress = Callable[[int, int], None]
"""Called with (experiences done, experiences to do) after each one."""
FAILURES_KEPT = 20


@dataclass
class CotReport:
    """What one :func:`profile_cot` run did (``to_dict``: its JSON report)."""

    job_id: str
    model: str
    experiences: int = 0
    asked: int = 0
    written: int = 0
    passed: int = 0
    failed: int = 0
    failed_by: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    attempts: int = 0
    retried_passed: int = 0
    failures: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    stopped: str | None = None
    written_ids: list[str] = field(default_factory=list)
    store_version: int | None = None

    @property
    def pass_share(self) -> float | None:
        """Share of the experiences asked whose CoT passed the checker."""
        return round(self.passed / self.asked, 4) if self.asked else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "model": self.model,
            "experiences": self.experiences,
            "asked": self.asked,
            "written": self.written,
            "passed": self.passed,
            "failed": self.failed,
            "failed_by": dict(sorted(self.failed_by.items())),
            "skipped": dict(sorted(self.skipped.items())),
            "attempts": self.attempts,
            "passed_after_retry": self.retried_passed,
            "pass_share": self.pass_share,
            "failures": list(self.failures),
            "seconds": round(self.seconds, 2),
            "stopped": self.stopped,
        }

    def summary(self) -> str:
        share = f" ({self.pass_share:.0%} of those asked)" if self.pass_share is not None else ""
        skipped = f"; skipped {dict(self.skipped)}" if self.skipped else ""
        return (
            f"CoT by {self.model}: {self.passed} passed{share}, {self.failed} failed "
            f"{dict(self.failed_by) or ''} of {self.asked} asked; {self.written} written"
            f"{skipped} ({self.seconds:.1f} s)"
        )


def cot_experiences(
    store: KnowledgeStore,
    *,
    database: str | None = None,
    ids: Iterable[str] | None = None,
) -> list[ExperienceUKF]:
    """Active experiences with a trusted SQL (labeled or verified) of ``database`` (None:
    every database), or those of ``ids``."""
    if ids is not None:
        found: Iterable[Any] = store.get_many(list(ids)).values()
    else:
        found = store.iterate(type="experience", tags={"DATABASE": database} if database else None)
    return [
        e
        for e in found
        if isinstance(e, ExperienceUKF)
        and not e.inactive_mark
        and (e.labeled or e.verified)
        and e.sql
        and e.question
    ]


def needs_cot(experience: ExperienceUKF, model: str, *, retry_failed: bool = False) -> str | None:
    """Why ``experience`` needs no CoT from ``model`` now (None: it needs one)."""
    if not experience.sql:
        return "no SQL"
    record = cot_record(experience)
    if record is None:
        return None
    if record.get("passed"):
        return "has a passing CoT"
    if not retry_failed and record.get("model") == model:
        return "failed before with this model"
    return None


def profile_cot(
    store: KnowledgeStore,
    experiences: Iterable[ExperienceUKF],
    writer: CotWriter,
    *,
    retry_failed: bool = False,
    with_knowledge: bool = False,
    limit: int | None = None,
    apply: bool = True,
    checkpoint: int = 5,
    job_id: str | None = None,
    progress: Progress | None = None,
    cancellation: Cancellation | None = None,
) -> CotReport:
    """Write checked CoT for ``experiences`` that need one (module docstring).

    Args:
        writer: the teacher tier's :class:`CotWriter`.
        retry_failed: ask again where this model failed before.
        with_knowledge: also show the writer the knowledge behind filters the question does
            not name (default: only the question and the SQL; with the 1.5B as teacher the
            knowledge lowered AutoFin's pass share, 26 % against 38 %).
        limit: ask about at most this many experiences (the others are left for later).
        apply: store the outcomes (False: report only).
        checkpoint: write the outcomes every this many experiences (and when stopping).
        progress: called with (done, total) after each experience asked.
        cancellation: stops the run between and inside the model's calls (default: the
            current token); what was done is written, then :class:`LLMCancelledError` is
            raised.
    """
    if checkpoint < 1:
        raise ValueError(f"checkpoint must be >= 1, got {checkpoint}")
    started = time.monotonic()
    report = CotReport(job_id or uuid.uuid4().hex[:12], writer.model)
    todo: list[ExperienceUKF] = []
    for experience in experiences:
        report.experiences += 1
        reason = needs_cot(experience, writer.model, retry_failed=retry_failed)
        if reason is None and limit is not None and len(todo) >= limit:
            reason = "over the limit"
        if reason is None:
            todo.append(experience)
        else:
            report.skipped[reason] += 1
    token = cancellation if cancellation is not None else current_cancellation()
    views: dict[str, set[str]] = {}
    lookup = CotKnowledgeLookup(store) if with_knowledge else None
    pending: dict[str, dict[str, Any]] = {}
    try:
        for done, experience in enumerate(todo, 1):
            if token is not None:
                token.raise_if_cancelled("CoT profiling")
            names = _schema_names(store, experience, views)
            attempt, shown = _write(writer, experience, names, lookup)
            if token is not None:
                token.raise_if_cancelled("CoT profiling")  # an attempt cut short is none
            report.asked += 1
            report.attempts += attempt.attempts
            record = _record(experience, attempt, report.job_id, shown)
            if attempt.passed:
                report.passed += 1
                report.retried_passed += attempt.attempts > 1
            else:
                report.failed += 1
                for kind in attempt.verdict.kinds or ["model error"]:
                    report.failed_by[kind] += 1
                if len(report.failures) < FAILURES_KEPT:
                    report.failures.append(
                        {"experience_id": experience.id, "reasons": record["verdict"]["reasons"]}
                    )
            pending[experience.id] = record
            if apply and len(pending) >= checkpoint:
                report.written_ids += _store(store, pending)
            if progress is not None:
                progress(done, len(todo))
    except LLMCancelledError as exc:
        report.stopped = str(exc)
        raise
    finally:
        if apply:
            report.written_ids += _store(store, pending)
            report.store_version = store.version
        report.written = len(report.written_ids)
        report.seconds = time.monotonic() - started
    return report


def _write(
    writer: CotWriter,
    experience: ExperienceUKF,
    names: set[str],
    lookup: CotKnowledgeLookup | None,
) -> tuple[CotAttempt, list[CotKnowledge]]:
    """The writer's attempt at ``experience`` and the knowledge it was shown."""
    assert experience.sql is not None
    dialect = experience.content_resources.get("dialect") or "sqlite"
    shown: list[CotKnowledge] = []
    try:
        if lookup is not None:
            database = next(iter(experience.tag_values("DATABASE")), None)
            parts = read_sql(experience.sql, dialect)
            shown = lookup.for_sql(experience.question, parts, database)
        attempt = writer.write(
            experience.question,
            experience.sql,
            dialect=dialect,
            schema_names=names,
            knowledge=shown,
        )
    except CotCheckError as exc:
        verdict = CotVerdict(problems=[f"unreadable SQL: {exc}"])
        attempt = CotAttempt(None, [], verdict, 0, writer.model, str(exc))
    return attempt, shown


def _schema_names(
    store: KnowledgeStore, experience: ExperienceUKF, views: dict[str, set[str]]
) -> set[str]:
    """The profiled table and column names of the experience's database (cached per run)."""
    database = next(iter(experience.tag_values("DATABASE")), None)
    if database is None:
        return set()
    if database not in views:
        view = SchemaView(store, database)
        views[database] = set(view.tables) | {column for _, column in view.columns}
    return views[database]


def _record(
    experience: ExperienceUKF, attempt: CotAttempt, job_id: str, shown: list[CotKnowledge]
) -> dict[str, Any]:
    assert experience.sql is not None
    record: dict[str, Any] = {
        "sql_hash": sql_hash(experience.sql),
        "passed": attempt.passed,
        "verdict": {**attempt.verdict.to_dict(), "reasons": attempt.verdict.reasons},
        "model": attempt.model,
        "attempts": attempt.attempts,
        "job_id": job_id,
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if attempt.passed:
        record |= {"text": attempt.text, "steps": list(attempt.steps)}
    if shown:
        record["knowledge"] = [k.id for k in shown]
    if attempt.error:
        record["error"] = attempt.error[:300]
    return record


def _store(store: KnowledgeStore, pending: dict[str, dict[str, Any]]) -> list[str]:
    """Write ``pending`` records onto their experiences; return the ids given a passing CoT;
    forget them. Each experience is read afresh and written only if it is still what was
    read (:meth:`kb.store.KnowledgeStore.compare_and_set`): one another writer changed
    meanwhile (feedback on it, say) is read again and the record put on what it is now, so
    neither write is lost; one whose SQL changed meanwhile is left alone."""
    passed: list[str] = []
    ids = list(pending)
    for _attempt in range(CAS_ATTEMPTS):
        if not ids:
            break
        pairs = {}
        for uid, entry in store.get_many(ids).items():
            updated = _with_record(entry, pending[uid])
            if updated is not None:
                pairs[uid] = (entry, updated)
        written, ids = store.compare_and_set(pairs)
        passed += [uid for uid in written if pending[uid]["passed"]]
    if ids:
        log.warning("CoT of %d experience(s) not written: changed on every try: %s", len(ids), ids)
    pending.clear()
    return passed


def _with_record(entry: BaseUKF, record: dict[str, Any]) -> ExperienceUKF | None:
    """``entry`` with its CoT ``record``, or None where it gets none: not an experience with
    SQL, its SQL changed since it was explained, or it has a passing CoT the record fails."""
    if not isinstance(entry, ExperienceUKF) or not entry.sql:
        return None
    if sql_hash(entry.sql) != record["sql_hash"]:
        return None
    kept = entry.profile.get(COT)
    if (
        isinstance(kept, dict)
        and kept.get("passed")
        and not record["passed"]
        and kept.get("sql_hash") == record["sql_hash"]
    ):
        return None  # never replace a passing CoT with a failure
    return with_cot(entry, record)
