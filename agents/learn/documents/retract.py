"""What a changed document's old version gave and its new version does not give again.

Each entry the last complete version gave (and this document is a parent of) is compared
with the new version's entries by (id, content):

- **given again** (same id and content): it keeps its status and takes the new version's
  provenance (``metadata["document"]``);
- **given by other documents too** (mined, another parent): only this document's link goes;
- **activated** (active now: reviewed and in use): deactivated, not purged. It stays in the
  store with its history (mining note, feedback, edits), its status ``rolled_back`` so the
  review queue lists it again (a reviewer may activate it again or reject it), and
  ``metadata["mining"]["retracted"]`` says which document version dropped it and what its
  status was;
- **a candidate never activated** (inactive, status ``candidate``): purged;
- **inactive after a decision** (rejected, rolled back, deactivated by a merge conflict):
  left as it is.

An entry kept inactive is hidden from the merge of the new version's entries
(:func:`merge_view`), so that what the new version says about the same thing is a new
candidate rather than a conflict with the kept one. When the new version gives an activated
entry's id with new content, the new candidate takes the id (the store holds one entry per
id) and keeps what it replaces in ``metadata["mining"]["replaces"]`` (content hash, content
and status history).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

from agents.learn.documents.build import DOCUMENT
from agents.learn.mine.candidates import ROLLED_BACK, is_candidate, mining_note
from kb.store import KnowledgeStore
from ukf import MINING_KEY, BaseUKF


@dataclass
class Retraction:
    """What :func:`retract` decided (and, unless a dry run, wrote)."""

    purged: list[str] = field(default_factory=list)
    deactivated: list[str] = field(default_factory=list)
    unlinked: list[str] = field(default_factory=list)
    hidden: set[str] = field(default_factory=set)
    """Ids kept inactive: the merge of the new version must not take them as existing."""
    entries: list[BaseUKF] = field(default_factory=list)
    """The new version's entries (one taking an activated entry's id notes what it replaces)."""

    @property
    def ids(self) -> list[str]:
        """The entries this document no longer gives (the report's ``retracted_ids``)."""
        return [*self.purged, *self.deactivated, *self.unlinked]


def retract(
    store: KnowledgeStore,
    document_id: str,
    previous: list[str],
    entries: list[BaseUKF],
    *,
    sha256: str,
    by: str,
    dry_run: bool,
) -> Retraction:
    """Take off what ``previous`` (ids the last complete version of the document
    ``document_id`` gave) holds and ``entries`` (the new version's, of content ``sha256``)
    does not give again (module docstring); write nothing when ``dry_run``."""
    again = {(e.id, e.content_hash): e for e in entries}
    result = Retraction()
    writes: list[BaseUKF] = []
    replaced: dict[str, BaseUKF] = {}
    at = datetime.now(UTC).isoformat()
    for old in store.get_many(previous).values():
        if document_id not in old.parents:
            continue
        new = again.get((old.id, old.content_hash))
        if new is not None:
            note = new.metadata.get(DOCUMENT)
            if old.metadata.get(DOCUMENT) != note:
                writes.append(old.clone(metadata={**old.metadata, DOCUMENT: note}))
            continue
        others = [p for p in old.parents if p != document_id]
        if others and old.source == "auto":
            writes.append(old.clone(parents=others))
            result.unlinked.append(old.id)
        elif is_candidate(old):
            result.purged.append(old.id)
        elif not old.inactive_mark:
            writes.append(_deactivated(old, sha256, by, at))
            result.deactivated.append(old.id)
            result.hidden.add(old.id)
            replaced[old.id] = old
        else:
            result.hidden.add(old.id)
    result.entries = [_noting(e, replaced[e.id]) if e.id in replaced else e for e in entries]
    if not dry_run:
        if writes:
            store.upsert_many(writes)
        if result.purged:
            store.remove(result.purged)
            store.purge(result.purged)
    return result


def _history(entry: BaseUKF) -> dict[str, Any]:
    note = mining_note(entry)
    return {
        "status": "active" if not entry.inactive_mark else note.get("status"),
        **{k: note[k] for k in ("at", "by", "job_id") if k in note},
    }


def _deactivated(old: BaseUKF, sha256: str, by: str, at: str) -> BaseUKF:
    note = mining_note(old)
    retracted = {"sha256": sha256, "at": at, "by": by, "previous": _history(old)}
    return old.clone(
        inactive_mark=True,
        metadata={
            **old.metadata,
            MINING_KEY: {**note, "status": ROLLED_BACK, "retracted": retracted},
        },
    )


def _noting(new: BaseUKF, old: BaseUKF) -> BaseUKF:
    """``new`` (same id as the activated ``old``, new content) noting what it replaces."""
    replaces = {
        "content_hash": old.content_hash,
        "content": old.content,
        "content_resources": old.content_resources,
        "previous": _history(old),
    }
    note = {**mining_note(new), "replaces": replaces}
    return new.clone(metadata={**new.metadata, MINING_KEY: note})


class _MergeView:
    """The store as the merge sees it: the entries ``hidden`` are not there."""

    def __init__(self, store: KnowledgeStore, hidden: set[str]) -> None:
        self._store, self._hidden = store, hidden

    def iterate(self, *args: Any, **kwargs: Any) -> Iterator[BaseUKF]:
        return (e for e in self._store.iterate(*args, **kwargs) if e.id not in self._hidden)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def merge_view(store: KnowledgeStore, retraction: Retraction) -> KnowledgeStore:
    """``store`` for :func:`kb.merge.merge_mined`, without the entries kept inactive."""
    if not retraction.hidden:
        return store
    return cast(KnowledgeStore, _MergeView(store, retraction.hidden))
