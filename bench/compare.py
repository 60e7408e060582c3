"""Side-by-side scores of several runs on the questions they all answered.

Runs of the same sample may stop at different points (runs resume, and long ones are cut
short); comparing their means over different questions would mislead. ``python -m bench
compare OUT_A OUT_B ...`` keeps the question ids present and scored in every run and prints,
per run, the mean of each metric, the latency p50/p90 and, against the first run, how many
questions each one won and lost on execution accuracy.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.report import LABELS, mean_scores, percentile
from bench.run import METRICS, QuestionResult, load_results


@dataclass
class RunScores:
    """One run's figures over the common questions."""

    name: str
    scores: dict[str, float]
    latency_p50: float
    latency_p90: float
    won: int  # EX 1 here, 0 in the first run
    lost: int  # EX 0 here, 1 in the first run


def common_ids(runs: Sequence[Sequence[QuestionResult]]) -> list[str]:
    """Ids scored in every run, in the first run's order."""
    scored = [{r.id for r in run if r.scored} for run in runs]
    shared = set.intersection(*scored) if scored else set()
    return [r.id for r in runs[0] if r.id in shared] if runs else []


def compare_runs(folders: Sequence[Path]) -> tuple[list[str], list[RunScores]]:
    """The common question ids and each run's figures over them."""
    runs = []
    for folder in folders:
        results = load_results(folder / "results.jsonl")
        if not results:
            raise FileNotFoundError(f"no results in {folder / 'results.jsonl'}")
        runs.append(results)
    ids = common_ids(runs)
    keep = set(ids)
    base = {r.id: r for r in runs[0] if r.id in keep}
    table = []
    for folder, results in zip(folders, runs, strict=True):
        kept = [r for r in results if r.id in keep]
        latencies = [r.latency_s for r in kept]
        ex = {r.id: (r.scores or {}).get("ex", 0.0) for r in kept}
        first = {i: (base[i].scores or {}).get("ex", 0.0) for i in ids}
        table.append(
            RunScores(
                name=folder.name,
                scores=mean_scores(kept),
                latency_p50=statistics.median(latencies) if latencies else 0.0,
                latency_p90=percentile(latencies, 0.9),
                won=sum(ex[i] > first[i] for i in ids),
                lost=sum(ex[i] < first[i] for i in ids),
            )
        )
    return ids, table


def render_comparison(ids: Sequence[str], table: Sequence[RunScores]) -> str:
    head = " | ".join(LABELS[m] for m in METRICS)
    lines = [
        f"{len(ids)} questions scored in every run",
        f"| run | {head} | p50 s | p90 s | won | lost |",
        "|---|" + "---:|" * (len(METRICS) + 4),
    ]
    for row in table:
        scores = " | ".join(f"{row.scores[m]:.3f}" for m in METRICS)
        lines.append(
            f"| {row.name} | {scores} | {row.latency_p50:.2f} | {row.latency_p90:.2f} "
            f"| {row.won} | {row.lost} |"
        )
    return "\n".join(lines)
