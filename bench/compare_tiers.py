"""Where a cascade's time goes: every run's latency on the questions each tier answered.

A cascade is faster than its large model alone only if the questions its small tier answers
save more than the escalated ones lose (they pay for the small tier's samples first). The
overall p50 hides that trade, so ``python -m bench compare`` adds, for every cascade run among
the runs compared (one whose answers name more than one tier in ``system_metadata.tier``), a
table per group of questions that run answered in one tier: how many, each run's EX, latency
p50 and mean on exactly those questions, and the mean as a share of the first run's. A tier
name's suffix after ``:`` (``default:plain``, the plain-prompt retry) counts with its tier; an
answer that names no tier (the predict failed) is grouped as ``none``.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from bench.run import QuestionResult


@dataclass
class TierRow:
    """One run's figures on the questions the cascade run answered in one tier."""

    run: str
    ex: float
    latency_p50: float
    latency_mean: float
    share_of_first: float | None  # mean latency / the first run's on the same questions


@dataclass
class TierGroup:
    """The questions ``cascade`` answered in ``tier`` and every run's figures on them."""

    cascade: str
    tier: str
    count: int
    rows: list[TierRow]


def answering_tier(result: QuestionResult) -> str | None:
    """The tier that answered (``default:plain`` counts as ``default``); None when not said."""
    tier = result.system_metadata.get("tier")
    return str(tier).split(":", 1)[0] if tier else None


def is_cascade(results: Sequence[QuestionResult]) -> bool:
    """Whether the run's answers came from more than one tier."""
    return len({t for t in map(answering_tier, results) if t is not None}) > 1


def tier_groups(
    names: Sequence[str], runs: Sequence[Sequence[QuestionResult]], ids: Sequence[str]
) -> list[TierGroup]:
    """For every cascade run, its tiers' question groups (among ``ids``, which every run
    answered: :func:`bench.compare.common_ids`) with every run's figures on them, tiers in the
    order they first answered."""
    by_id = [{r.id: r for r in run} for run in runs]
    groups = []
    for name, results in zip(names, by_id, strict=True):
        kept = [results[i] for i in ids]
        if not is_cascade(kept):
            continue
        tiers: dict[str, list[str]] = {}
        for result in kept:
            tiers.setdefault(answering_tier(result) or "none", []).append(result.id)
        for tier, members in tiers.items():
            rows = [
                _row(run_name, [run[i] for i in members])
                for run_name, run in zip(names, by_id, strict=True)
            ]
            first = rows[0].latency_mean
            for row in rows:
                row.share_of_first = row.latency_mean / first if first > 0 else None
            groups.append(TierGroup(cascade=name, tier=tier, count=len(members), rows=rows))
    return groups


def render_tier_groups(groups: Sequence[TierGroup]) -> str:
    """Markdown: one table per cascade run, a block of rows per tier."""
    sections = []
    for cascade in dict.fromkeys(g.cascade for g in groups):
        lines = [
            f"Latency on the questions each tier of {cascade} answered",
            "| tier | questions | run | EX | p50 s | mean s | mean vs first |",
            "|---|---:|---|---:|---:|---:|---:|",
        ]
        for group in (g for g in groups if g.cascade == cascade):
            for row in group.rows:
                share = "-" if row.share_of_first is None else f"{row.share_of_first:.2f}x"
                lines.append(
                    f"| {group.tier} | {group.count} | {row.run} | {row.ex:.3f} "
                    f"| {row.latency_p50:.2f} | {row.latency_mean:.2f} | {share} |"
                )
        sections.append("\n".join(lines))
    return "\n\n".join(sections)


def _row(run: str, results: Sequence[QuestionResult]) -> TierRow:
    latencies = [r.latency_s for r in results]
    return TierRow(
        run=run,
        ex=statistics.fmean((r.scores or {}).get("ex", 0.0) for r in results),
        latency_p50=statistics.median(latencies),
        latency_mean=statistics.fmean(latencies),
        share_of_first=None,
    )
