"""Merging mined knowledge into the store, by the preference order of docs/architecture.md.

For each mined candidate, against active entries about the same thing (same
:func:`kb.visibility.logical_key`, in a layer that applies to the candidate's scope):

1. **merged**: an existing entry (or an earlier candidate) has the same content: its synonyms
   gain the candidate's and, when both were mined, its ``parents`` the candidate's sources
   (the experiences that show it); nothing else changes, and nothing is written when nothing
   is new (mining the same log again leaves the store's version as it was).
2. **discarded**: the content conflicts with schema, labeled or human-verified knowledge
   (``is_authoritative``): that knowledge wins.
3. **dropped**: mined contents disagree with each other (candidates, or a candidate and an
   earlier mined entry): none can be trusted, so all are dropped and earlier mined entries in
   the conflict are marked inactive.
4. **inserted**: everything else, with a priority below every authoritative entry.

``merge_mined`` reports a decision per candidate (and per deactivated entry) with its reason.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from kb.store import KnowledgeStore
from kb.visibility import logical_key
from ukf import BaseUKF

log = logging.getLogger(__name__)
Action = Literal["merged", "discarded", "dropped", "inserted"]


@dataclass(frozen=True)
class MergeDecision:
    """What happened to one entry, by which rule (1-4), and why."""

    ukf_id: str
    name: str
    type: str
    action: Action
    rule: int
    reason: str
    existing_id: str | None = None


@dataclass
class MergeReport:
    decisions: list[MergeDecision] = field(default_factory=list)
    version: int | None = None

    def counts(self) -> dict[str, int]:
        return dict(Counter(d.action for d in self.decisions))

    def of(self, action: Action) -> list[MergeDecision]:
        return [d for d in self.decisions if d.action == action]


def _in_scope(existing: BaseUKF, candidate: BaseUKF, own_scope: bool = False) -> bool:
    """Whether ``existing`` applies where ``candidate`` would (same or broader layer; the
    same layer only with ``own_scope``)."""
    if own_scope:
        return existing.workspace == candidate.workspace and existing.owner == candidate.owner
    return existing.workspace in (None, candidate.workspace) and existing.owner in (
        None,
        candidate.owner,
    )


def _decide(
    report: MergeReport,
    entry: BaseUKF,
    action: Action,
    rule: int,
    reason: str,
    existing: BaseUKF | None = None,
) -> None:
    report.decisions.append(
        MergeDecision(
            entry.id,
            entry.name,
            entry.type,
            action,
            rule,
            reason,
            existing.id if existing else None,
        )
    )


@dataclass
class _Row:
    candidate: BaseUKF
    action: Action
    rule: int
    reason: str
    target: BaseUKF | None = None


class _Group:
    """Candidates and existing entries sharing one logical key."""

    def __init__(
        self, candidates: list[BaseUKF], existing: list[BaseUKF], own_scope: bool = False
    ) -> None:
        self.candidates = candidates
        self.existing = existing
        self.own_scope = own_scope

    def merge(self, report: MergeReport, writes: dict[str, BaseUKF], priority_cap: int) -> None:
        rows = self._classify()
        mined_rows = [
            r
            for r in rows
            if r.action == "inserted"
            or (r.action == "merged" and r.target is not None and not r.target.is_authoritative)
        ]
        mined_old = [
            e
            for e in self.existing
            if not e.is_authoritative
            and any(_in_scope(e, r.candidate, self.own_scope) for r in mined_rows)
        ]
        contents = {r.candidate.content_hash for r in mined_rows}
        contents |= {e.content_hash for e in mined_old}
        if len(contents) > 1:
            reason = f"{len(contents)} conflicting mined contents for the same knowledge"
            for row in mined_rows:
                row.action, row.rule, row.reason, row.target = "dropped", 3, reason, None
            for old in mined_old:
                writes[old.id] = old.clone(inactive_mark=True)
        for row in rows:
            if row.action == "inserted":
                priority = min(row.candidate.priority, priority_cap)
                writes[row.candidate.id] = row.candidate.clone(priority=priority)
                row.reason = f"new mined knowledge at priority {priority}"
        for row in rows:
            if row.action == "merged" and row.target is not None:
                target = writes.get(row.target.id, row.target)
                new = [s for s in row.candidate.synonyms if s not in target.synonyms]
                sources = _new_sources(target, row.candidate)
                if new or sources:  # the same fact mined again from the same source: no write
                    writes[target.id] = target.clone(
                        synonyms=[*target.synonyms, *new], parents=[*target.parents, *sources]
                    )
                row.reason += f"; {len(new)} new synonym(s), {len(sources)} new source(s)"
            _decide(report, row.candidate, row.action, row.rule, row.reason, row.target)
        if len(contents) > 1:
            for old in mined_old:
                _decide(
                    report,
                    old,
                    "dropped",
                    3,
                    "existing mined entry contradicted by new mined knowledge",
                    old,
                )

    def _classify(self) -> list[_Row]:
        rows: list[_Row] = []
        pending: list[BaseUKF] = []
        for cand in self.candidates:
            scope = [e for e in self.existing if _in_scope(e, cand, self.own_scope)]
            same = self._same_content(cand, [*scope, *pending])
            authority = [e for e in scope if e.is_authoritative]
            if same is not None:
                rows.append(_Row(cand, "merged", 1, f"same content as {same.id}", same))
            elif authority:
                top = authority[0]
                reason = f"conflicts with authoritative {top.type} {top.id} ({top.source})"
                rows.append(_Row(cand, "discarded", 2, reason, top))
            else:
                pending.append(cand)
                rows.append(_Row(cand, "inserted", 4, ""))
        return rows

    @staticmethod
    def _same_content(cand: BaseUKF, others: list[BaseUKF]) -> BaseUKF | None:
        matches = [o for o in others if o.content_hash == cand.content_hash]
        by_id = [o for o in matches if o.id == cand.id]
        found = by_id or matches
        return found[0] if found else None


def _new_sources(target: BaseUKF, candidate: BaseUKF) -> list[str]:
    """The candidate's parents a mined ``target`` lacks (a fact mined again from another
    experience gains it as a source); none for knowledge that was not mined."""
    if target.source != "auto" or candidate.source != "auto":
        return []
    return [p for p in candidate.parents if p not in target.parents]


def merge_mined(
    store: KnowledgeStore,
    candidates: Iterable[BaseUKF],
    *,
    apply: bool = True,
    include_inactive: bool = False,
    own_scope: bool = False,
) -> MergeReport:
    """Merge mined ``candidates`` into ``store`` (one transaction); report every decision.

    With ``apply=False`` nothing is written (a dry run with the same report).
    ``include_inactive``: inactive *mined* entries (candidates waiting for activation,
    rejected or conflicting ones) count as existing, so mining the same facts again merges
    into them instead of inserting them anew (inactive authoritative entries still do not).
    ``own_scope``: only entries of each candidate's own layer (same workspace and owner) count
    as existing; a user's correction then overlays broader knowledge (the user layer wins for
    that user) instead of conflicting with it and deactivating it for everyone.
    """
    report = MergeReport()
    groups: dict[str, list[BaseUKF]] = defaultdict(list)
    scoped: dict[tuple[str, str | None, str | None], list[BaseUKF]] = defaultdict(list)
    for cand in candidates:
        groups[logical_key(cand)].append(cand)
        scoped[(logical_key(cand), cand.workspace, cand.owner)].append(cand)
    existing: dict[str, list[BaseUKF]] = defaultdict(list)
    active = None if include_inactive else True
    for entry in store.iterate(logical_key=list(groups), active=active):
        if entry.inactive_mark and entry.is_authoritative:
            continue
        existing[logical_key(entry)].append(entry)
    floor = store.min_priority(authoritative=True)
    priority_cap = min(0, floor if floor is not None else 0) - 1
    writes: dict[str, BaseUKF] = {}
    # candidates of different scopes (workspace, owner) never conflict with each other
    for (key, _workspace, _owner), members in scoped.items():
        _Group(members, existing[key], own_scope).merge(report, writes, priority_cap)
    if apply and writes:
        report.version = store.upsert_many(writes.values())
    log.info("merged mined knowledge: %s", report.counts())
    return report
