"""Mined knowledge waits as a *candidate* until a gate (or a reviewer) activates it.

A candidate is an ordinary entry with ``inactive_mark=True`` and ``metadata["mining"]``:

    {"status": "candidate", "job_id": ..., "miner": "labeled", "miner_version": 1,
     "trust": "verified" | "labeled" | "unlabeled", "how": "verbatim" | "initials" | ...}

Inactive entries are invisible to every index (they load and follow active entries only),
so ``ask`` cannot retrieve a candidate, while the store still holds it with its provenance
for the gate, the review queue and re-mining (which finds it and adds nothing). The status
lives in ``metadata``, outside the identity and the content hash: activating a candidate
keeps its id. Activation clears the mark and sets ``status`` to ``active``; an entry the
merge deactivated for a conflict keeps ``status`` as it was, so a conflict is never mistaken
for a candidate waiting for its gate.

:func:`rollback` undoes a job: every entry it activated goes back to inactive with status
``rolled_back`` (kept, with its provenance, so re-mining still finds it and adds nothing; a
reviewer may activate it again one by one).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from kb.store import KnowledgeStore
from ukf import MINING_KEY, BaseUKF

CANDIDATE, ACTIVE, REJECTED = "candidate", "active", "rejected"
ROLLED_BACK = "rolled_back"
# statuses a mined entry may be activated (or rejected) from
UNDECIDED = frozenset({CANDIDATE, ROLLED_BACK})


def mining_note(entry: BaseUKF) -> dict[str, Any]:
    note = entry.metadata.get(MINING_KEY)
    return dict(note) if isinstance(note, dict) else {}


def is_candidate(entry: BaseUKF) -> bool:
    """A mined entry waiting for activation (inactive, status ``candidate``)."""
    return entry.inactive_mark and mining_note(entry).get("status") == CANDIDATE


def candidates(store: KnowledgeStore, *, job_id: str | None = None) -> list[BaseUKF]:
    """Every candidate in ``store`` (of one mining job when ``job_id`` is given)."""
    found = [e for e in store.iterate(source="auto", active=False) if is_candidate(e)]
    if job_id is not None:
        found = [e for e in found if mining_note(e).get("job_id") == job_id]
    return found


def is_undecided(entry: BaseUKF) -> bool:
    """A candidate, or an entry a rollback put back: inactive, awaiting a decision."""
    return entry.inactive_mark and mining_note(entry).get("status") in UNDECIDED


GATE = "gate"
"""Who the regression gate's decisions are by (``metadata["mining"]["by"]``)."""


def is_gate_rejected(entry: BaseUKF) -> bool:
    """A mined entry the regression gate rejected, no person having decided on it since."""
    note = mining_note(entry)
    return entry.inactive_mark and note.get("status") == REJECTED and note.get("by") == GATE


def _set_status(
    store: KnowledgeStore,
    ids: Iterable[str],
    status: str,
    *,
    active: bool,
    by: str,
    overrule_gate: bool = False,
) -> list[str]:
    entries = [
        e
        for e in store.get_many(ids).values()
        if is_undecided(e) or (overrule_gate and is_gate_rejected(e))
    ]
    return _write_status(store, entries, status, active=active, by=by)


def _write_status(
    store: KnowledgeStore, entries: list[BaseUKF], status: str, *, active: bool, by: str
) -> list[str]:
    at = datetime.now(UTC).isoformat()
    changed = [
        e.clone(
            inactive_mark=not active,
            metadata={
                **e.metadata,
                MINING_KEY: {**mining_note(e), "status": status, "at": at, "by": by},
            },
        )
        for e in entries
    ]
    if changed:
        store.upsert_many(changed)
    return [e.id for e in changed]


def activate(
    store: KnowledgeStore, ids: Iterable[str], *, by: str = "system", overrule_gate: bool = False
) -> list[str]:
    """Make the candidates ``ids`` (or rolled-back entries; with ``overrule_gate``, entries
    the gate rejected: a reviewer's call) visible to retrieval; returns the ids activated."""
    return _set_status(store, ids, ACTIVE, active=True, by=by, overrule_gate=overrule_gate)


def reject(
    store: KnowledgeStore, ids: Iterable[str], *, by: str = "system", overrule_gate: bool = False
) -> list[str]:
    """Keep the candidates ``ids`` inactive for good (re-mining merges into them, so a
    rejected fact does not come back as a new candidate); with ``overrule_gate``, also
    confirm the gate's rejection of such entries (then by ``by``, out of the review queue)."""
    return _set_status(store, ids, REJECTED, active=False, by=by, overrule_gate=overrule_gate)


def activated_by(
    store: KnowledgeStore, job_id: str, *, workspace: str | None = None
) -> list[BaseUKF]:
    """The entries of mining job ``job_id`` that are active now (of ``workspace`` only when
    given)."""
    criteria: dict[str, Any] = {"source": "auto"}
    if workspace is not None:
        criteria["workspace"] = workspace
    return [
        e
        for e in store.iterate(**criteria)
        if mining_note(e).get("job_id") == job_id and mining_note(e).get("status") == ACTIVE
    ]


def rollback(
    store: KnowledgeStore, job_id: str, *, by: str = "system", workspace: str | None = None
) -> list[str]:
    """Deactivate everything mining job ``job_id`` activated (status ``rolled_back``), in
    one store write; returns the ids (of ``workspace`` only when given)."""
    return _write_status(
        store, activated_by(store, job_id, workspace=workspace), ROLLED_BACK, active=False, by=by
    )
