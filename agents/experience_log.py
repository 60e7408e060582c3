"""Every question becomes an Experience; feedback turns it into a labeled one.

``ExperienceLog.record`` stores each answered question as an *unlabeled* Experience (the
question, its context, the SQL, the reasoning and the result schema), owned by the asker. The
answer id is the experience id plus a nonce, so feedback finds its experience with one lookup
and knows which SQL it is about.

``ExperienceLog.feedback`` applies a verdict:
- ``correct``: the answered SQL becomes a labeled, verified Experience;
- ``wrong`` with ``corrected_sql``: the corrected SQL is executed read-only first (a write, a
  syntax error or a dead database is refused with :class:`FeedbackError` and nothing is
  stored), then stored as a labeled, verified Experience;
- ``wrong`` without a correction: the log entry records the verdict (it stays unlabeled).

A correction (``wrong`` with a corrected SQL that differs from the answer's) also teaches the
facts that differ between the two statements (:mod:`agents.learn.mine.correction`): they are
listed in :attr:`FeedbackOutcome.learned`, scoped like the correction.

Every verdict counts on the knowledge the answer used (:mod:`agents.learn.credit`): credit for
``correct``, blame for ``wrong``; one answer counts once, and a changed verdict moves its count.

A labeled experience is the asker's own at first (:mod:`agents.experience_review`): their next
similar questions retrieve it as an example at once; it reaches everyone in their workspace
(global when they have none) when enough users agree on it or a reviewer approves it.
Feedback with system access (no asker) is shared at once.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from agents.answer import Answer
from agents.experience_review import FINGERPRINT, PENDING, REVIEW, ExperienceReview, StringSource
from agents.learn.credit import BlameThreshold, CreditOutcome, apply_verdict, count_for
from agents.learn.mine.correction import LearnedFact, learn_from_correction
from agents.sql.vote import fingerprint, is_ordered
from kb.errors import KnowledgeNotFoundError
from kb.store import KnowledgeStore
from kb.target.database import Database
from kb.target.results import Results
from kb.visibility import Reader
from ukf import ExperienceUKF
from ukf.context import QueryContext

Verdict = Literal["correct", "wrong"]
MAX_ANSWERS_KEPT = 20
ID_LENGTH = 32


class FeedbackError(ValueError):
    """Feedback that cannot be applied (unknown answer, corrected SQL that fails or writes).

    ``status`` is the HTTP status that fits: 404 for an unknown answer, 422 for bad SQL.
    """

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class FeedbackOutcome:
    """What feedback did: the experience it labeled (if any), and who sees it now (``scope``:
    ``user``, ``workspace`` or ``global``; ``shared_id``: the shared copy); the facts a
    correction taught (``learned``), and the credit or blame counted on the knowledge the
    answer used (``credit``)."""

    answer_id: str
    verdict: str
    experience_id: str
    labeled: bool
    row_count: int | None = None
    scope: str = "user"
    shared_id: str | None = None
    learned: list[LearnedFact] = field(default_factory=list)
    credit: CreditOutcome = field(default_factory=CreditOutcome)


class ExperienceLog:
    """Logs questions of one database and applies feedback on them.

    Args:
        agreement: see :class:`agents.experience_review.ExperienceReview`.
        blame: when blame sends a used entry to review (:mod:`agents.learn.credit`).
        strings: returns the current string index (phrases it knows are not learned again
            from a correction); None: corrections are aligned without it.
    """

    def __init__(
        self,
        store: KnowledgeStore,
        database: Database,
        database_name: str,
        dialect: str,
        *,
        agreement: int = 2,
        blame: BlameThreshold | None = None,
        strings: StringSource | None = None,
    ) -> None:
        self.store, self.database = store, database
        self.database_name, self.dialect = database_name, dialect
        self.blame = blame or BlameThreshold()
        self.strings = strings
        self.review = ExperienceReview(store, agreement=agreement, strings=strings)
        self._lock = threading.Lock()

    def record_answer(self, answer: Answer, context: QueryContext) -> tuple[str, str]:
        """Store an answered question (its SQL, confidence, signals, abstention, tier, error
        and the knowledge it used) as :meth:`record` does; (answer id, experience id)."""
        return self.record(
            answer.question,
            context,
            sql=answer.sql,
            reasoning=answer.reasoning,
            columns=answer.columns,
            extra={
                "confidence": answer.confidence,
                "vote_share": answer.vote_share,
                "signals": answer.signals,
                "abstained": answer.abstained,
                "tier": answer.tier,
                "error": answer.error,
            },
            knowledge=[k.id for k in answer.knowledge],
            answer_extra={"confidence": answer.confidence, "signals": answer.signals},
        )

    def record(
        self,
        question: str,
        context: QueryContext | None,
        *,
        sql: str | None,
        reasoning: str = "",
        columns: list[str] | None = None,
        extra: Mapping[str, Any] | None = None,
        knowledge: list[str] | None = None,
        answer_extra: Mapping[str, Any] | None = None,
    ) -> tuple[str, str]:
        """Store the question as an unlabeled Experience; return (answer id, experience id).

        ``knowledge``: ids of the entries the answer used (feedback credits or blames them).
        ``answer_extra``: kept with this answer's record (its confidence signals: with the
        verdict feedback adds, what the calibrator is refitted on)."""
        context = context or QueryContext()
        with self._lock:
            entry = ExperienceUKF.create(
                question,
                sql,
                database=self.database_name,
                dialect=self.dialect,
                context=context,
                result_schema=[{"name": c} for c in columns or []],
                cot=reasoning or None,
                labeled=False,
                owner=context.user,
                workspace=context.workspace,
                creator="ask",
                source="user",
            )
            previous = _get(self.store, entry.id)
            answers = dict(previous.content_resources.get("answers", {})) if previous else {}
            answer_id = f"{entry.id}-{secrets.token_hex(6)}"
            answers[answer_id] = {
                "sql": sql,
                "at": datetime.now(UTC).isoformat(),
                "knowledge": list(dict.fromkeys(knowledge or [])),
                **(answer_extra or {}),
            }
            answers = dict(list(answers.items())[-MAX_ANSWERS_KEPT:])
            resources = {**entry.content_resources, "answers": answers, **(extra or {})}
            resources["asked"] = (
                int(previous.content_resources.get("asked", 0) if previous else 0) + 1
            )
            self.store.upsert(entry.clone(content_resources=resources))
        return answer_id, entry.id

    def feedback(
        self,
        answer_id: str,
        verdict: Verdict,
        *,
        corrected_sql: str | None = None,
        comment: str = "",
        reviewer: str | None = None,
        reader: Reader | None = None,
    ) -> FeedbackOutcome:
        """Apply a verdict on ``answer_id`` (see the module docstring); answers ``reader``
        cannot see are unknown (404)."""
        if verdict not in ("correct", "wrong"):
            raise FeedbackError(f"verdict must be 'correct' or 'wrong', not {verdict!r}")
        logged = self._logged(answer_id, reader)
        answered = logged.content_resources["answers"][answer_id].get("sql")
        if verdict == "correct" and corrected_sql is None:
            sql = answered
        elif corrected_sql is not None:
            sql = corrected_sql
        else:
            credit = self._note_verdict(logged, answer_id, verdict, comment, reviewer)
            return FeedbackOutcome(answer_id, verdict, logged.id, labeled=False, credit=credit)
        if not sql:
            raise FeedbackError(f"answer {answer_id} has no SQL to confirm; send corrected_sql")
        results = self.database.execute(sql, max_rows=1000)
        if not results.ok:
            raise FeedbackError(f"corrected SQL was not stored: {_failure_text(results)}")
        labeled = ExperienceUKF.create(
            logged.question,
            sql,
            database=self.database_name,
            dialect=self.dialect,
            context=logged.context,
            result_schema=[{"name": c} for c in results.columns],
            cot=logged.cot if sql == answered else None,
            labeled=True,
            verified=True,
            owner=logged.owner,
            workspace=logged.workspace,
            creator="feedback",
            source="user",
            content_resources={
                FINGERPRINT: fingerprint(results, ordered=is_ordered(sql, self.dialect)),
                **({REVIEW: {"status": PENDING}} if logged.owner else {}),
                "feedback": {
                    "answer_id": answer_id,
                    "verdict": verdict,
                    "comment": comment,
                    "reviewer": reviewer,
                    "corrected": corrected_sql is not None,
                    "answered_sql": answered,
                    "at": datetime.now(UTC).isoformat(),
                },
            },
        )
        self.store.upsert(labeled)
        assert isinstance(labeled, ExperienceUKF)
        learned = self._learn(labeled, answered, verdict)
        sharing = self.review.after_feedback(labeled)
        credit = self._note_verdict(logged, answer_id, verdict, comment, reviewer)
        return FeedbackOutcome(
            answer_id,
            verdict,
            labeled.id,
            True,
            results.row_count,
            scope=sharing.scope,
            shared_id=sharing.shared_id,
            learned=[*learned, *sharing.learned],
            credit=credit,
        )

    def _learn(
        self, labeled: ExperienceUKF, answered: str | None, verdict: str
    ) -> list[LearnedFact]:
        """The facts a correction teaches in its own scope (a shared copy teaches its layer's
        when :class:`ExperienceReview` shares it)."""
        if verdict != "wrong" or labeled.sql == answered:
            return []
        if labeled.owner is None:
            return []  # shared at once: after_feedback learns from it as the shared copy
        strings = self.strings() if self.strings is not None else None
        learning = learn_from_correction(self.store, labeled, wrong_sql=answered, strings=strings)
        return learning.facts

    def _logged(self, answer_id: str, reader: Reader | None) -> ExperienceUKF:
        experience_id = answer_id[:ID_LENGTH]
        entry = _get(self.store, experience_id, reader) if len(answer_id) > ID_LENGTH else None
        if entry is None or answer_id not in entry.content_resources.get("answers", {}):
            raise FeedbackError(f"unknown answer id {answer_id!r}", status=404)
        return entry

    def _note_verdict(
        self,
        logged: ExperienceUKF,
        answer_id: str,
        verdict: str,
        comment: str,
        reviewer: str | None,
    ) -> CreditOutcome:
        """Record the verdict on the answer and count it on the knowledge the answer used
        (once per answer: a changed verdict moves the count)."""
        with self._lock:
            current = _get(self.store, logged.id) or logged
            answers = dict(current.content_resources.get("answers", {}))
            record = dict(answers.get(answer_id, {}))
            count = count_for(verdict)
            previous = record.get("counted")
            if answer_id in answers:
                answers[answer_id] = {
                    **record,
                    "verdict": verdict,
                    "comment": comment,
                    "reviewer": reviewer,
                    "counted": count,
                }
            resources = {**current.content_resources, "answers": answers}
            return apply_verdict(
                self.store,
                [uid for uid in record.get("knowledge") or [] if uid != current.id],
                count,
                previous=previous if previous in ("credit", "blame") else None,
                threshold=self.blame,
                also=[current.clone(content_resources=resources)],
            )


def _get(store: KnowledgeStore, ukf_id: str, reader: Reader | None = None) -> ExperienceUKF | None:
    try:
        entry = store.get(ukf_id, reader=reader)
    except KnowledgeNotFoundError:
        return None
    return entry if isinstance(entry, ExperienceUKF) else None


def _failure_text(results: Results) -> str:
    """``results``' error led by its kind once ("refused: ..." already names it)."""
    error, kind = results.error or "", results.error_kind
    return error if error.startswith(f"{kind}:") else f"{kind}: {error}"
