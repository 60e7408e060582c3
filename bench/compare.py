"""Side-by-side scores of several runs on the questions they all answered.

Runs of the same sample may stop at different points (runs resume, and long ones are cut
short); comparing their means over different questions would mislead. ``python -m bench
compare OUT_A OUT_B ...`` keeps the question ids present and scored in every run and prints,
per run, the mean of each metric, the latency p50/p90 and, against the first run, how many
questions each one won and lost on execution accuracy. When a run is a cascade it also prints
every run's latency on the questions each of that run's tiers answered
(:mod:`bench.compare_tiers`).

For streaming runs (``--stream``, with and without ``--mine-every``) ``--out DIR`` also writes
``comparison.md`` with each run's EX over its first 50 and last 100 questions and
``learning_curves.png``: every run's cumulative and rolling EX against questions seen.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.compare_tiers import render_tier_groups, tier_groups
from bench.report import (
    LABELS,
    WINDOW,
    StreamFigures,
    learning_curve,
    mean_scores,
    percentile,
    rolling_curve,
    stream_figures,
)
from bench.run import METRICS, QuestionResult, load_mining, load_results


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
    runs = [_load(folder) for folder in folders]
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


def compare_tiers(folders: Sequence[Path], ids: Sequence[str]) -> str | None:
    """The latency-by-tier tables of the cascade runs among ``folders`` (see
    :mod:`bench.compare_tiers`) over ``ids``; None when no run is a cascade."""
    runs = [_load(folder) for folder in folders]
    groups = tier_groups([f.name for f in folders], runs, ids)
    return render_tier_groups(groups) if groups else None


# ---------------------------------------------------------------- streaming runs
@dataclass
class RunCurve:
    """One streaming run over the common questions, in stream order."""

    name: str
    figures: StreamFigures
    cumulative: list[float]
    rolling: list[float]
    mining_rounds: int
    mining_seconds: float
    activated: int


def compare_curves(folders: Sequence[Path], window: int = WINDOW) -> tuple[int, list[RunCurve]]:
    """Each run's learning curve and first/last figures over the questions every run scored
    (in each run's own order); the count of those questions."""
    runs = [_load(folder) for folder in folders]
    keep = set(common_ids(runs))
    curves = []
    for folder, results in zip(folders, runs, strict=True):
        kept = sorted((r for r in results if r.id in keep), key=lambda r: r.position)
        rounds = load_mining(folder)
        curves.append(
            RunCurve(
                name=folder.name,
                figures=stream_figures(kept),
                cumulative=learning_curve(kept),
                rolling=rolling_curve(kept, window),
                mining_rounds=len(rounds),
                mining_seconds=sum(r.get("seconds", 0.0) for r in rounds),
                activated=sum(r.get("activated", 0) for r in rounds),
            )
        )
    return len(keep), curves


def render_curves(count: int, curves: Sequence[RunCurve]) -> str:
    first, last = curves[0].figures.first_n, curves[0].figures.last_n
    lines = [
        f"Learning curves over {count} questions scored in every run",
        f"| run | EX first {first} | EX last {last} | last - first | EX all "
        "| mining rounds | mining s | activated |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for curve in curves:
        f = curve.figures
        lines.append(
            f"| {curve.name} | {f.first_ex:.3f} | {f.last_ex:.3f} | {100 * f.gain:+.1f} "
            f"| {f.final_ex:.3f} | {curve.mining_rounds} | {curve.mining_seconds:.1f} "
            f"| {curve.activated} |"
        )
    if curves and curves[0].figures.overlapping:
        lines.append(f"(fewer than {first + last} questions: the first and last windows overlap)")
    return "\n".join(lines)


def plot_curves(curves: Sequence[RunCurve], path: Path, window: int = WINDOW) -> None:
    """Cumulative (solid) and rolling (dashed) EX of every run on one chart."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for curve in curves:
        x = range(1, len(curve.cumulative) + 1)
        (line,) = ax.plot(x, curve.cumulative, label=f"{curve.name}: cumulative EX")
        ax.plot(
            x,
            curve.rolling,
            linestyle="--",
            color=line.get_color(),
            alpha=0.7,
            label=f"{curve.name}: EX over the last {window}",
        )
    ax.set_xlabel("questions seen")
    ax.set_ylabel("EX")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_comparison(folders: Sequence[Path], out_dir: Path, window: int = WINDOW) -> Path:
    """``comparison.md`` in ``out_dir``: the score table and, when any run streamed, the
    learning-curve table and ``learning_curves.png``; returns its path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    ids, table = compare_runs(folders)
    sections = [render_comparison(ids, table)]
    tiers = compare_tiers(folders, ids)
    if tiers is not None:
        sections.append(tiers)
    if any(_streamed(folder) for folder in folders):
        count, curves = compare_curves(folders, window)
        plot_curves(curves, out_dir / "learning_curves.png", window)
        sections += [render_curves(count, curves), "![learning curves](learning_curves.png)"]
    path = out_dir / "comparison.md"
    path.write_text("# " + " vs ".join(f.name for f in folders) + "\n\n" + "\n\n".join(sections))
    return path


def _streamed(folder: Path) -> bool:
    manifest = folder / "run.json"
    return manifest.exists() and bool(json.loads(manifest.read_text()).get("stream"))


def _load(folder: Path) -> list[QuestionResult]:
    results = load_results(folder / "results.jsonl")
    if not results:
        raise FileNotFoundError(f"no results in {folder / 'results.jsonl'}")
    return results
