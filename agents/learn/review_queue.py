"""The review queue of learned knowledge: what waits for a person before ``ask`` uses it.

An entry is in the queue for one or more *reasons* (the queue reads them from ``metadata``
only, so other writers can send entries to it without this module knowing them):

- ``candidate``: mined, inactive, waiting for the gate or a reviewer
  (``metadata["mining"]["status"]``, see :mod:`agents.learn.mine.candidates`);
- ``rolled_back``: mined, activated, then taken back by a rollback of its mining job;
- ``gate_rejected``: mined and rejected by the regression gate (its measured effect under
  ``gate``), until a reviewer overrules the gate (approve) or confirms it (reject);
- ``blamed``: its blame passed the threshold (``metadata["review"] = {"reason": "blamed",
  "status": "pending" | "flagged", ...}``, see :mod:`agents.learn.credit`): ``pending``
  entries were deactivated; ``flagged`` ones (human-verified or schema) are still active.

Decisions:

- **approve** activates the entry. A mined entry gets status ``active``; a blamed one gets
  ``metadata["review"]["status"] = "approved"``. Its credit and blame counters
  (``metadata["feedback"]``) are *kept* as they are: they are the record of how it did, and
  the approval (who, when) is stored next to them; since the entry now has a review note,
  further blame does not send it back to the queue (:func:`agents.learn.credit.apply_verdict`
  sends an entry once).
- **reject** makes it inactive for good: status ``rejected`` (mined) or review status
  ``rejected`` (blamed; a flagged entry is deactivated). The entry stays in the store, so
  re-mining merges into it and adds nothing (the merge counts inactive mined entries as
  existing).
- **edit** changes what a waiting entry says before it is approved: only the fields in
  :data:`EDITABLE` (never identity fields: those make the id), validated by the entry's type;
  each edit is recorded in ``metadata["edits"]`` (who, when, which fields, old values).
- **rollback** deactivates everything one mining job activated
  (:func:`agents.learn.mine.candidates.rollback`).

A reviewer works in a *scope*: a workspace (then only that workspace's entries are theirs)
or None (every entry). An entry outside the scope is unknown to them, like one that does not
exist (:class:`ReviewQueueError` with status 404); one that is not in the queue is 409; an
edit that is not valid is 422.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from agents.learn.mine.candidates import (
    CANDIDATE,
    REJECTED,
    ROLLED_BACK,
    UNDECIDED,
    activate,
    activated_by,
    is_gate_rejected,
    mining_note,
    reject,
    rollback,
)
from kb.store import KnowledgeStore
from ukf import BaseUKF, ExperienceUKF

REVIEW = "review"
EDITS = "edits"
BLAMED = "blamed"
GATE_REJECTED = "gate_rejected"
REASONS = (CANDIDATE, ROLLED_BACK, GATE_REJECTED, BLAMED)
FEEDBACK = "feedback"
PENDING, FLAGGED, APPROVED = "pending", "flagged", "approved"
EDITABLE = frozenset({"content", "content_resources", "synonyms", "description", "priority"})


class ReviewQueueError(LookupError):
    """A queue operation that cannot be applied; ``status`` is the HTTP status that fits."""

    def __init__(self, message: str, status: int = 404) -> None:
        super().__init__(message)
        self.status = status


def review_note(entry: BaseUKF) -> dict[str, Any]:
    note = entry.metadata.get(REVIEW)
    return dict(note) if isinstance(note, dict) else {}


def reasons(entry: BaseUKF) -> list[str]:
    """Why ``entry`` waits in the queue (empty: it does not)."""
    found = []
    status = mining_note(entry).get("status")
    if entry.inactive_mark and status in UNDECIDED:
        found.append(str(status))
    if is_gate_rejected(entry):
        found.append(GATE_REJECTED)
    note = review_note(entry)
    if note.get("reason") == BLAMED and note.get("status", PENDING) in (PENDING, FLAGGED):
        found.append(BLAMED)
    return found


@dataclass(frozen=True)
class QueueFilter:
    """Which waiting entries to list (fields combine with AND; None: any)."""

    types: Sequence[str] | None = None
    job_id: str | None = None
    reason: str | None = None
    database: str | None = None

    def matches(self, entry: BaseUKF, why: list[str]) -> bool:
        return (
            bool(why)
            and (self.reason is None or self.reason in why)
            and (self.job_id is None or mining_note(entry).get("job_id") == self.job_id)
        )


@dataclass(frozen=True)
class ReviewItem:
    """A waiting entry, why it waits, and the experiences it was learned from."""

    entry: BaseUKF
    reasons: list[str]
    sources: list[dict[str, Any]]

    def to_dict(self, *, detail: bool = False) -> dict[str, Any]:
        e, note = self.entry, mining_note(self.entry)
        item: dict[str, Any] = {
            "id": e.id,
            "type": e.type,
            "name": e.name,
            "content": e.content,
            "synonyms": list(e.synonyms),
            "reasons": self.reasons,
            "database": next(iter(e.tag_values("DATABASE")), None),
            "workspace": e.workspace,
            "owner": e.owner,
            "job_id": note.get("job_id"),
            "miner": note.get("miner"),
            "trust": note.get("trust"),
            "how": note.get("how"),
            "gate": note.get("gate"),  # the regression gate's measured effect, when gated
            "status": note.get("status"),
            "active": not e.inactive_mark,
            "review": review_note(e) or None,
            "feedback": e.metadata.get(FEEDBACK),
            "sources": self.sources if detail else [s["id"] for s in self.sources],
            "timestamp": e.timestamp.isoformat(),
        }
        if detail:
            item["entry"] = e.to_dict()
        return item


class ReviewQueue:
    """List and decide waiting entries (see the module docstring)."""

    def __init__(self, store: KnowledgeStore) -> None:
        self.store = store

    # ------------------------------------------------------------------------ reads
    def waiting(
        self,
        *,
        workspace: str | None,
        flt: QueueFilter | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> tuple[list[ReviewItem], int]:
        """One page of the waiting entries in scope ``workspace`` (None: all), newest first,
        and how many match in all."""
        flt = flt or QueueFilter()
        # active too: flagged entries wait while still in use
        criteria: dict[str, Any] = {"active": None}
        if workspace is not None:
            criteria["workspace"] = workspace
        if flt.types:
            criteria["type"] = list(flt.types)
        if flt.database is not None:
            criteria["tags"] = {"DATABASE": flt.database}
        waiting = [
            (entry, why)
            for entry in self.store.iterate(**criteria)
            if flt.matches(entry, why := reasons(entry))
        ]
        waiting.sort(key=lambda pair: (pair[0].timestamp, pair[0].id), reverse=True)
        page = waiting[offset : offset + limit]
        return [self._item(entry, why, detail=False) for entry, why in page], len(waiting)

    def get(self, ukf_id: str, *, workspace: str | None) -> ReviewItem:
        """The waiting entry ``ukf_id`` with its source experiences."""
        entry = self._waiting(ukf_id, workspace)
        return self._item(entry, reasons(entry), detail=True)

    # ---------------------------------------------------------------------- decisions
    def approve(self, ukf_id: str, reviewer: str, *, workspace: str | None) -> BaseUKF:
        """Activate the waiting entry ``ukf_id`` (counters kept; see the module docstring)."""
        entry = self._waiting(ukf_id, workspace)
        if BLAMED in reasons(entry):
            entry = self._decide_blame(entry, APPROVED, reviewer, active=True)
        if mining_note(entry).get("status") in UNDECIDED or is_gate_rejected(entry):
            activate(self.store, [entry.id], by=reviewer, overrule_gate=True)
        return self.store.get(entry.id)

    def reject(
        self, ukf_id: str, reviewer: str, *, workspace: str | None, reason: str = ""
    ) -> BaseUKF:
        """Keep the waiting entry ``ukf_id`` inactive for good."""
        entry = self._waiting(ukf_id, workspace)
        if BLAMED in reasons(entry):
            entry = self._decide_blame(entry, REJECTED, reviewer, active=False, reason=reason)
        if mining_note(entry).get("status") in UNDECIDED or is_gate_rejected(entry):
            reject(self.store, [entry.id], by=reviewer, overrule_gate=True)
        return self.store.get(entry.id)

    def edit(
        self, ukf_id: str, changes: Mapping[str, Any], reviewer: str, *, workspace: str | None
    ) -> BaseUKF:
        """Change the :data:`EDITABLE` fields of the waiting entry ``ukf_id``; it stays in
        the queue (approve it to use it)."""
        refused = sorted(set(changes) - EDITABLE)
        if refused or not changes:
            raise ReviewQueueError(
                f"field(s) {refused or '(none)'} cannot be edited in review; "
                f"editable: {sorted(EDITABLE)}",
                422,
            )
        entry = self._waiting(ukf_id, workspace)
        old = entry.model_dump(mode="json", include=set(changes))
        record = {"by": reviewer, "at": _now(), "fields": sorted(changes), "old": old}
        data = entry.model_dump()
        data.update(changes)
        data["metadata"] = {**entry.metadata, EDITS: [*_edits(entry), record]}
        try:
            edited = type(entry).model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "(entry)"
            raise ReviewQueueError(f"field {where!r}: {first['msg']}", 422) from None
        self.store.upsert(edited)
        return edited

    def rollback(self, job_id: str, reviewer: str, *, workspace: str | None) -> list[str]:
        """Deactivate every entry mining job ``job_id`` activated (in scope); 404 when the
        scope holds no entry of that job at all."""
        if not activated_by(self.store, job_id, workspace=workspace) and not any(
            mining_note(e).get("job_id") == job_id
            for e in self.store.iterate(source="auto", active=None, workspace=workspace)
        ):
            raise ReviewQueueError(f"no knowledge mined by job {job_id!r}", 404)
        return rollback(self.store, job_id, by=reviewer, workspace=workspace)

    # ------------------------------------------------------------------------ helpers
    def _waiting(self, ukf_id: str, workspace: str | None) -> BaseUKF:
        entry = self.store.get_many([ukf_id]).get(ukf_id)
        if entry is None or (workspace is not None and entry.workspace != workspace):
            raise ReviewQueueError(f"no knowledge entry {ukf_id!r}", 404)
        if not reasons(entry):
            state = "active" if not entry.inactive_mark else _decided(entry)
            raise ReviewQueueError(f"entry {ukf_id} is not in the review queue ({state})", 409)
        return entry

    def _decide_blame(
        self, entry: BaseUKF, status: str, reviewer: str, *, active: bool, reason: str = ""
    ) -> BaseUKF:
        note = {**review_note(entry), "status": status, "by": reviewer, "at": _now()}
        if reason:
            note["comment"] = reason
        decided = entry.clone(inactive_mark=not active, metadata={**entry.metadata, REVIEW: note})
        self.store.upsert(decided)
        return decided

    def _item(self, entry: BaseUKF, why: list[str], *, detail: bool) -> ReviewItem:
        found = self.store.get_many(entry.parents) if detail else {}
        sources = [_source(uid, found.get(uid)) for uid in entry.parents]
        return ReviewItem(entry, why, sources)


def _source(uid: str, entry: BaseUKF | None) -> dict[str, Any]:
    if entry is None:
        return {"id": uid, "found": False}
    if not isinstance(entry, ExperienceUKF):
        return {"id": uid, "found": True, "type": entry.type, "name": entry.name}
    return {
        "id": uid,
        "found": True,
        "type": entry.type,
        "question": entry.question,
        "sql": entry.sql,
        "database": next(iter(entry.tag_values("DATABASE")), None),
        "workspace": entry.workspace,
        "owner": entry.owner,
        "labeled": entry.labeled,
        "verified": entry.verified,
    }


def _decided(entry: BaseUKF) -> str:
    status = review_note(entry).get("status") or mining_note(entry).get("status")
    return f"status {status}" if status else "inactive, not waiting for review"


def _edits(entry: BaseUKF) -> list[Any]:
    edits = entry.metadata.get(EDITS)
    return list(edits) if isinstance(edits, list) else []


def _now() -> str:
    return datetime.now(UTC).isoformat()


__all__ = [
    "BLAMED",
    "EDITABLE",
    "REASONS",
    "QueueFilter",
    "ReviewItem",
    "ReviewQueue",
    "ReviewQueueError",
    "reasons",
]
