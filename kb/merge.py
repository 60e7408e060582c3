"""Merging mined knowledge into the store, by the preference order of DESIGN.md.

For each mined candidate, against active entries about the same thing (same
:func:`kb.visibility.logical_key`, in a layer that applies to the candidate's scope):

1. **merged**: an existing entry (or an earlier candidate) has the same content: its synonyms
   gain the candidate's, nothing else changes.
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


def _in_scope(existing: BaseUKF, candidate: BaseUKF) -> bool:
    """Whether ``existing`` applies where ``candidate`` would (same or broader layer)."""
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


class _Group:
    """Candidates and existing entries sharing one logical key."""

    def __init__(self, candidates: list[BaseUKF], existing: list[BaseUKF]) -> None:
        self.candidates = candidates
        self.existing = existing

    def merge(self, report: MergeReport, writes: dict[str, BaseUKF], priority_cap: int) -> None:
        pending: list[BaseUKF] = []
        for cand in self.candidates:
            scope = [e for e in self.existing if _in_scope(e, cand)]
            same = self._same_content(cand, [*scope, *pending])
            authority = [e for e in scope if e.is_authoritative]
            if same is not None:
                target = writes.get(same.id, same)
                new = [s for s in cand.synonyms if s not in target.synonyms]
                if new:
                    target = target.clone(synonyms=[*target.synonyms, *new])
                    writes[target.id] = target
                _decide(
                    report,
                    cand,
                    "merged",
                    1,
                    f"same content as {same.id}; {len(new)} new synonym(s)",
                    same,
                )
            elif authority:
                _decide(
                    report,
                    cand,
                    "discarded",
                    2,
                    f"conflicts with authoritative {authority[0].type} {authority[0].id} "
                    f"({authority[0].source})",
                    authority[0],
                )
            else:
                pending.append(cand)
        self._resolve_pending(pending, report, writes, priority_cap)

    @staticmethod
    def _same_content(cand: BaseUKF, others: list[BaseUKF]) -> BaseUKF | None:
        matches = [o for o in others if o.content_hash == cand.content_hash]
        by_id = [o for o in matches if o.id == cand.id]
        return (by_id or matches or [None])[0]

    def _resolve_pending(
        self,
        pending: list[BaseUKF],
        report: MergeReport,
        writes: dict[str, BaseUKF],
        priority_cap: int,
    ) -> None:
        mined = [e for e in self.existing if not e.is_authoritative]
        contents = {c.content_hash for c in pending} | {
            e.content_hash for e in mined if any(_in_scope(e, c) for c in pending)
        }
        if pending and len(contents) > 1:
            for cand in pending:
                _decide(
                    report,
                    cand,
                    "dropped",
                    3,
                    f"{len(contents)} conflicting mined contents for the same knowledge",
                )
            for old in mined:
                if any(_in_scope(old, c) for c in pending):
                    writes[old.id] = old.clone(inactive_mark=True)
                    _decide(
                        report,
                        old,
                        "dropped",
                        3,
                        "existing mined entry contradicted by new mined knowledge",
                        old,
                    )
            return
        for cand in pending:
            priority = min(cand.priority, priority_cap)
            writes[cand.id] = cand if priority == cand.priority else cand.clone(priority=priority)
            _decide(report, cand, "inserted", 4, f"new mined knowledge at priority {priority}")


def merge_mined(
    store: KnowledgeStore, candidates: Iterable[BaseUKF], *, apply: bool = True
) -> MergeReport:
    """Merge mined ``candidates`` into ``store`` (one transaction); report every decision.

    With ``apply=False`` nothing is written (a dry run with the same report).
    """
    report = MergeReport()
    groups: dict[str, list[BaseUKF]] = defaultdict(list)
    for cand in candidates:
        groups[logical_key(cand)].append(cand)
    existing: dict[str, list[BaseUKF]] = defaultdict(list)
    for entry in store.iterate(logical_key=list(groups)):
        existing[logical_key(entry)].append(entry)
    floor = store.min_priority(authoritative=True)
    priority_cap = min(0, floor if floor is not None else 0) - 1
    writes: dict[str, BaseUKF] = {}
    for key, members in groups.items():
        _Group(members, existing[key]).merge(report, writes, priority_cap)
    if apply and writes:
        report.version = store.upsert_many(writes.values())
    log.info("merged mined knowledge: %s", report.counts())
    return report
