"""Credit and blame: feedback on an answer counts on every knowledge entry it used.

Each answer records the ids of the knowledge that went into its prompt
(:class:`agents.answer.Answer` ``knowledge``; :mod:`agents.experience_log` keeps them with
the answer). A verdict ``correct`` adds one *credit* to each, ``wrong`` one *blame*. The
counters live in the entry's ``metadata["feedback"]``::

    {"credit": 2, "blame": 1, "last_at": "2026-11-25T17:00:00+00:00"}

``metadata`` is outside the identity and the content hash: counting changes neither the id
nor the ``version`` of an entry. One answer counts once: a second feedback with the same
verdict changes nothing, a changed verdict *moves* the answer's count (credit → blame or back).

When an entry's blame reaches :class:`BlameThreshold` (``blame >= min_blame`` and
``blame > ratio * credit``) it goes to the review queue, ``metadata["review"]``::

    {"reason": "blamed", "status": "pending" | "flagged", "credit": .., "blame": .., "at": ..}

- mined and other non-authoritative entries (``source="auto"``, not human-verified) are
  *deactivated* (``inactive_mark``, status ``pending``): no index loads them any more, so no
  answer uses them until a reviewer restores them;
- schema entries (tables, columns, values from profiling), entries people wrote and
  human-verified ones are only *flagged* (status ``flagged``) and stay active: a few wrong
  answers do not outweigh the database's own schema or a person's word, and removing a table
  would break every question about it; a reviewer decides.

An entry already in the queue is not queued again; counters keep moving.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from kb.store import KnowledgeStore
from ukf import BaseUKF

FEEDBACK = "feedback"
REVIEW = "review"
BLAMED = "blamed"
PENDING, FLAGGED = "pending", "flagged"
Count = Literal["credit", "blame"]


@dataclass(frozen=True)
class BlameThreshold:
    """When blame sends an entry to review: ``blame >= min_blame and blame > ratio * credit``."""

    min_blame: int = 3
    ratio: float = 2.0

    def __post_init__(self) -> None:
        if self.min_blame < 1:
            raise ValueError(f"min_blame must be at least 1, got {self.min_blame}")

    def passed(self, credit: int, blame: int) -> bool:
        return blame >= self.min_blame and blame > self.ratio * credit


@dataclass
class CreditOutcome:
    """What one verdict did to the counters: the ids counted (``changed``), the entries sent
    to review deactivated, and those only flagged."""

    count: Count | None = None
    changed: list[str] = field(default_factory=list)
    deactivated: list[str] = field(default_factory=list)
    flagged: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "entries": len(self.changed),
            "deactivated": self.deactivated,
            "flagged": self.flagged,
        }


def count_for(verdict: str) -> Count:
    """``correct`` → credit, anything else (``wrong``) → blame."""
    return "credit" if verdict == "correct" else "blame"


def counters(entry: BaseUKF) -> dict[str, Any]:
    """The entry's feedback counters (zeros when it never had feedback)."""
    found = entry.metadata.get(FEEDBACK)
    note = dict(found) if isinstance(found, dict) else {}
    note.setdefault("credit", 0)
    note.setdefault("blame", 0)
    return note


def review_note(entry: BaseUKF) -> dict[str, Any]:
    found = entry.metadata.get(REVIEW)
    return dict(found) if isinstance(found, dict) else {}


def may_deactivate(entry: BaseUKF) -> bool:
    """Whether blame may take ``entry`` out of use (mined, not schema, not a person's)."""
    return not entry.is_authoritative


def apply_verdict(
    store: KnowledgeStore,
    ids: Iterable[str],
    count: Count,
    *,
    previous: Count | None = None,
    threshold: BlameThreshold | None = None,
    also: Iterable[BaseUKF] = (),
) -> CreditOutcome:
    """Count ``count`` on the entries ``ids``; ``previous`` is what the same answer counted
    before (the same: nothing changes; the other: it moves). ``also`` (the answer's record of
    what it counted) is written in the same transaction, so a crash never counts twice."""
    outcome = CreditOutcome(count)
    writes: list[BaseUKF] = list(also)
    if previous == count:
        if writes:
            store.upsert_many(writes)
        return outcome
    threshold = threshold or BlameThreshold()
    at = datetime.now(UTC).isoformat()
    for entry in store.get_many(ids).values():
        note = counters(entry)
        note[count] = int(note[count]) + 1
        if previous is not None:
            note[previous] = max(0, int(note[previous]) - 1)
        note["last_at"] = at
        metadata = {**entry.metadata, FEEDBACK: note}
        inactive = entry.inactive_mark
        if threshold.passed(int(note["credit"]), int(note["blame"])) and not review_note(entry):
            deactivate = may_deactivate(entry)
            metadata[REVIEW] = {
                "reason": BLAMED,
                "status": PENDING if deactivate else FLAGGED,
                "credit": note["credit"],
                "blame": note["blame"],
                "at": at,
            }
            (outcome.deactivated if deactivate else outcome.flagged).append(entry.id)
            inactive = inactive or deactivate
        writes.append(entry.clone(metadata=metadata, inactive_mark=inactive))
        outcome.changed.append(entry.id)
    if writes:
        store.upsert_many(writes)
    return outcome


def blamed(store: KnowledgeStore) -> list[BaseUKF]:
    """Entries blame sent to review (deactivated or flagged), most blamed first."""
    found = [
        e
        for e in store.iterate(active=None)
        if review_note(e).get("reason") == BLAMED
        and review_note(e).get("status") in (PENDING, FLAGGED)
    ]
    found.sort(key=lambda e: (-int(counters(e)["blame"]), e.id))
    return found
