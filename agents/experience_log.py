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

A labeled experience is the asker's own at first (:mod:`agents.experience_review`): their next
similar questions retrieve it as an example at once; it reaches everyone in their workspace
(global when they have none) when enough users agree on it or a reviewer approves it.
Feedback with system access (no asker) is shared at once.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from agents.experience_review import FINGERPRINT, PENDING, REVIEW, ExperienceReview
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
    ``user``, ``workspace`` or ``global``; ``shared_id``: the shared copy)."""

    answer_id: str
    verdict: str
    experience_id: str
    labeled: bool
    row_count: int | None = None
    scope: str = "user"
    shared_id: str | None = None


class ExperienceLog:
    """Logs questions of one database and applies feedback on them."""

    def __init__(
        self,
        store: KnowledgeStore,
        database: Database,
        database_name: str,
        dialect: str,
        *,
        agreement: int = 2,
    ) -> None:
        self.store, self.database = store, database
        self.database_name, self.dialect = database_name, dialect
        self.review = ExperienceReview(store, agreement=agreement)
        self._lock = threading.Lock()

    def record(
        self,
        question: str,
        context: QueryContext | None,
        *,
        sql: str | None,
        reasoning: str = "",
        columns: list[str] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> tuple[str, str]:
        """Store the question as an unlabeled Experience; return (answer id, experience id)."""
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
            answers[answer_id] = {"sql": sql, "at": datetime.now(UTC).isoformat()}
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
            self._note_verdict(logged, answer_id, verdict, comment, reviewer)
            return FeedbackOutcome(answer_id, verdict, logged.id, labeled=False)
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
                    "at": datetime.now(UTC).isoformat(),
                },
            },
        )
        self.store.upsert(labeled)
        assert isinstance(labeled, ExperienceUKF)
        sharing = self.review.after_feedback(labeled)
        self._note_verdict(logged, answer_id, verdict, comment, reviewer)
        return FeedbackOutcome(
            answer_id,
            verdict,
            labeled.id,
            True,
            results.row_count,
            scope=sharing.scope,
            shared_id=sharing.shared_id,
        )

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
    ) -> None:
        with self._lock:
            current = _get(self.store, logged.id) or logged
            answers = dict(current.content_resources.get("answers", {}))
            if answer_id in answers:
                answers[answer_id] = {
                    **answers[answer_id],
                    "verdict": verdict,
                    "comment": comment,
                    "reviewer": reviewer,
                }
            resources = {**current.content_resources, "answers": answers}
            self.store.upsert(current.clone(content_resources=resources))


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
