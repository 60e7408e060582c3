"""How far a correction reaches: the asker's own scope first, shared after agreement or review.

A labeled experience made from an analyst's feedback is verified by execution (its SQL ran
read-only), not by anyone else. So it is stored in the asker's scope: owned by the asker, in
the asker's workspace, with review status ``pending``. The asker's next questions retrieve it
at once; nobody else's do. It is *shared*, as a copy without an owner in the asker's
workspace layer (the global layer when the asker has no workspace), when either

- ``agreement`` distinct users of that workspace corrected the same question (same text, same
  database) to the same result (:func:`agents.sql.vote.fingerprint` of its rows), or
- a reviewer approves it (:meth:`ExperienceReview.approve`); a rejected one stays private.

Feedback given with system access (no asker: the CLI, benchmarks, offline jobs) is trusted and
shared at once. The shared copy names the private copies it came from in ``parents`` and how
it was shared in ``content_resources["review"]``.

A shared correction also teaches its facts to the shared layer: the SQL facts that differ
between the answered and the corrected SQL (:mod:`agents.learn.mine.correction`), mined from
the shared copy, so they take its workspace (or the global layer) and no owner. A private
correction's facts are its asker's alone (:class:`agents.experience_log.ExperienceLog` mines
them when the feedback arrives); a rejected correction's facts stay private with it.

Reviewers see and decide only what their scope covers: a reviewer working in a workspace, the
corrections made in it; a reviewer without a workspace, every correction (and only such a
reviewer may share into the global layer). An entry out of a reviewer's scope is unknown to
them (404), like an entry that does not exist.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from agents.learn.mine.correction import LearnedFact, learn_from_correction
from indices.string import StringIndex
from kb.errors import KnowledgeNotFoundError
from kb.store import KnowledgeStore
from ukf import ExperienceUKF

REVIEW = "review"
FINGERPRINT = "result_fingerprint"
PENDING, SHARED, APPROVED, REJECTED = "pending", "shared", "approved", "rejected"
# who gave the feedback a shared copy keeps as its creator (an identity field: the shared copy
# of a question has one id whoever corrected it, so a later sharing replaces it)
FEEDBACK_CREATOR = "feedback"
# the current string index (indices are swapped while the server runs)
StringSource = Callable[[], StringIndex | None]


class ReviewError(LookupError):
    """A review that cannot be applied; ``status`` is the HTTP status that fits."""

    def __init__(self, message: str, status: int = 404) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Sharing:
    """Where a correction is visible now: ``user`` (its asker only), ``workspace`` or
    ``global``; ``shared_id`` is the shared copy's id (None while private); ``learned``: the
    facts the shared copy taught its layer."""

    scope: str
    shared_id: str | None = None
    learned: list[LearnedFact] = field(default_factory=list)


class ExperienceReview:
    """Shares corrections by agreement or review (see the module docstring).

    Args:
        store: the knowledge store.
        agreement: distinct users whose corrections of one question must agree before it is
            shared without a review (1: every correction is shared at once).
        strings: the current string index, for learning facts from a shared correction.
    """

    def __init__(
        self, store: KnowledgeStore, *, agreement: int = 2, strings: StringSource | None = None
    ) -> None:
        if agreement < 1:
            raise ValueError(f"agreement must be at least 1, got {agreement}")
        self.store, self.agreement, self.strings = store, agreement, strings

    # ------------------------------------------------------------------ after feedback
    def after_feedback(self, entry: ExperienceUKF) -> Sharing:
        """Share ``entry`` (a correction just stored) if it is trusted or now agreed on."""
        if entry.owner is None:
            return Sharing(layer_of(entry.workspace), entry.id, self._learn(entry))
        peers = self._agreeing(entry)
        owners = sorted({peer.owner for peer in peers if peer.owner is not None})
        if len(owners) < self.agreement:
            return Sharing("user")
        shared = self._share(entry, peers, {"how": "agreement", "users": owners})
        return Sharing(layer_of(entry.workspace), shared.id, self._learn(shared))

    def _agreeing(self, entry: ExperienceUKF) -> list[ExperienceUKF]:
        """Private corrections of the same question in the same workspace with the same
        result, ``entry`` included, that nobody rejected."""
        found = self.store.iterate(
            type="experience",
            name=entry.name,
            tags={"DATABASE": entry.tag_values("DATABASE")},
        )
        fingerprint = entry.content_resources.get(FINGERPRINT)
        return [
            peer
            for peer in found
            if isinstance(peer, ExperienceUKF)
            and peer.workspace == entry.workspace  # a filter of None would mean any
            and is_correction(peer)
            and peer.content_resources.get(FINGERPRINT) == fingerprint
            and _status(peer) != REJECTED
        ]

    # ------------------------------------------------------------------ review queue
    def pending(self, *, workspace: str | None, limit: int = 100) -> list[ExperienceUKF]:
        """Corrections waiting for a reviewer working in ``workspace`` (None: every one),
        newest first."""
        flt: dict[str, Any] = {"type": "experience", "source": "user"}
        if workspace is not None:
            flt["workspace"] = workspace
        waiting = [
            e
            for e in self.store.iterate(**flt)
            if isinstance(e, ExperienceUKF) and is_correction(e) and _status(e) == PENDING
        ]
        waiting.sort(key=lambda e: (e.timestamp, e.id), reverse=True)
        return waiting[:limit]

    def approve(self, experience_id: str, reviewer: str, *, workspace: str | None) -> Sharing:
        """Share the correction ``experience_id`` (a reviewer working in ``workspace``)."""
        entry = self._reviewable(experience_id, workspace)
        note = {"how": "review", "reviewer": reviewer}
        shared = self._share(entry, [entry], note)
        return Sharing(layer_of(entry.workspace), shared.id, self._learn(shared))

    def reject(
        self, experience_id: str, reviewer: str, *, workspace: str | None, reason: str = ""
    ) -> ExperienceUKF:
        """Keep the correction private for good (its asker still sees it)."""
        entry = self._reviewable(experience_id, workspace)
        return self._mark(entry, REJECTED, {"reviewer": reviewer, "reason": reason})

    def _reviewable(self, experience_id: str, workspace: str | None) -> ExperienceUKF:
        unknown = ReviewError(f"no correction {experience_id!r} waits for your review")
        try:
            entry = self.store.get(experience_id)
        except KnowledgeNotFoundError:
            raise unknown from None
        if not isinstance(entry, ExperienceUKF) or not is_correction(entry):
            raise unknown
        if workspace is not None and entry.workspace != workspace:
            raise unknown
        if _status(entry) != PENDING:
            raise ReviewError(f"correction {experience_id} is {_status(entry)} already", 409)
        return entry

    # ------------------------------------------------------------------ learning
    def _learn(self, shared: ExperienceUKF) -> list[LearnedFact]:
        """The facts a shared correction teaches its layer (none for a confirmation)."""
        note = shared.content_resources.get("feedback")
        if (
            not isinstance(note, dict)
            or not note.get("corrected")
            or note.get("verdict") != "wrong"
        ):
            return []
        if note.get("answered_sql") == shared.sql:
            return []
        strings = self.strings() if self.strings is not None else None
        return learn_from_correction(self.store, shared, strings=strings).facts

    # ------------------------------------------------------------------ writing
    def _share(
        self, entry: ExperienceUKF, sources: list[ExperienceUKF], note: dict[str, Any]
    ) -> ExperienceUKF:
        at = datetime.now(UTC).isoformat()
        shared = ExperienceUKF.create(
            entry.question,
            entry.sql,
            database=next(iter(entry.tag_values("DATABASE")), None),
            dialect=entry.content_resources.get("dialect"),
            context=entry.context,
            result_schema=entry.content_resources.get("result_schema") or [],
            cot=entry.cot,
            labeled=True,
            verified=True,
            workspace=entry.workspace,
            creator=FEEDBACK_CREATOR,
            source="user",
            parents=sorted({s.id for s in sources}),
            content_resources={
                "feedback": entry.content_resources.get("feedback"),
                FINGERPRINT: entry.content_resources.get(FINGERPRINT),
                REVIEW: {"status": SHARED, "at": at, **note},
            },
        )
        self.store.upsert(shared)
        status = APPROVED if note["how"] == "review" else SHARED
        for source in sources:
            self._mark(source, status, {**note, "shared_id": shared.id})
        return shared

    def _mark(self, entry: ExperienceUKF, status: str, note: dict[str, Any]) -> ExperienceUKF:
        review = {"status": status, "at": datetime.now(UTC).isoformat(), **note}
        marked = entry.clone(content_resources={**entry.content_resources, REVIEW: review})
        self.store.upsert(marked)
        assert isinstance(marked, ExperienceUKF)
        return marked


def is_correction(entry: ExperienceUKF) -> bool:
    """A private labeled experience made from a user's feedback."""
    return (
        entry.owner is not None
        and bool(entry.content_resources.get("labeled"))
        and entry.creator == FEEDBACK_CREATOR
        and isinstance(entry.content_resources.get(REVIEW), dict)
    )


def layer_of(workspace: str | None) -> str:
    return "global" if workspace is None else "workspace"


def _status(entry: ExperienceUKF) -> str:
    review = entry.content_resources.get(REVIEW)
    return str(review.get("status")) if isinstance(review, dict) else ""
