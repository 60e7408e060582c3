"""Markdown reports and PNG plots for a benchmark run.

The report gives the mean of every metric over scored questions, the same broken down by
difficulty and by tag, latency percentiles, the predicts that ran past their timeout, and the
questions that could not be scored. For a streaming run it adds the learning curve: accuracy
against the number of questions seen, cumulative and over a rolling window, with EX of the
first 50 and of the last 100 questions (the issue-22 comparison), and the mining rounds when
the run mined (``mining.jsonl``).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.run import METRICS, QuestionResult, load_mining

LABELS = {"ex": "EX", "spider_ex": "Spider EX", "soft_f1": "soft-F1", "bf_beta": "BF-β"}
WINDOW = 50
FIRST, LAST = 50, 100  # the stream's first and last questions compared (issue 22)
_ORDER = {
    "easy": 0,
    "simple": 0,
    "medium": 1,
    "moderate": 1,
    "hard": 2,
    "challenging": 2,
    "extra": 3,
}


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def mean_scores(results: Iterable[QuestionResult]) -> dict[str, float]:
    scored = [r.scores for r in results if r.scores is not None]
    if not scored:
        return dict.fromkeys(METRICS, 0.0)
    return {m: statistics.fmean(s[m] for s in scored) for m in METRICS}


def group_by(results: Sequence[QuestionResult], key: str) -> dict[str, list[QuestionResult]]:
    groups: dict[str, list[QuestionResult]] = defaultdict(list)
    for result in results:
        if key == "tag":
            for tag in result.tags:
                groups[tag].append(result)
        else:
            groups[str(getattr(result, key) or "(none)")].append(result)
    return dict(sorted(groups.items(), key=lambda item: (_ORDER.get(item[0], 99), item[0])))


def learning_curve(results: Sequence[QuestionResult], metric: str = "ex") -> list[float]:
    """Cumulative mean of ``metric`` after each scored question, in dataset order."""
    curve, total = [], 0.0
    for count, result in enumerate((r for r in results if r.scores is not None), start=1):
        total += result.scores[metric]  # type: ignore[index]
        curve.append(total / count)
    return curve


def rolling_curve(results: Sequence[QuestionResult], window: int = WINDOW) -> list[float]:
    """Mean EX over the last ``window`` scored questions (fewer at the start), after each."""
    ex = [r.scores["ex"] for r in results if r.scores is not None]
    return [statistics.fmean(ex[max(0, i - window + 1) : i + 1]) for i in range(len(ex))]


@dataclass(frozen=True)
class StreamFigures:
    """A stream's EX over its first and last questions (scored, in order)."""

    scored: int
    first_n: int
    first_ex: float
    last_n: int
    last_ex: float
    final_ex: float  # cumulative over the whole stream

    @property
    def gain(self) -> float:
        """EX of the last questions minus EX of the first ones."""
        return self.last_ex - self.first_ex

    @property
    def overlapping(self) -> bool:
        """The first and last windows share questions (a stream shorter than both)."""
        return self.first_n + self.last_n > self.scored


def stream_figures(
    results: Sequence[QuestionResult], first: int = FIRST, last: int = LAST
) -> StreamFigures:
    """EX of the first ``first`` and of the last ``last`` scored questions."""
    ex = [r.scores["ex"] for r in results if r.scores is not None]
    head, tail = ex[:first], ex[-last:]
    return StreamFigures(
        scored=len(ex),
        first_n=len(head),
        first_ex=statistics.fmean(head) if head else 0.0,
        last_n=len(tail),
        last_ex=statistics.fmean(tail) if tail else 0.0,
        final_ex=statistics.fmean(ex) if ex else 0.0,
    )


def stream_line(figures: StreamFigures) -> str:
    note = " (the two windows overlap: a short stream)" if figures.overlapping else ""
    return (
        f"EX of the first {figures.first_n} questions {figures.first_ex:.3f}, of the last "
        f"{figures.last_n} {figures.last_ex:.3f}: {100 * figures.gain:+.1f} EX points{note}"
    )


def mining_lines(rounds: Sequence[dict[str, Any]]) -> list[str]:
    """One table row per mining round (empty when the run did not mine)."""
    if not rounds:
        return []
    lines = [
        "| round | phase | after question | experiences | facts known | new candidates "
        "| activated | rejected | waiting | mine s | gate s |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rounds:
        lines.append(
            f"| {r['round']} | {r['phase']} | {r['after_question']} | {r['experiences']} "
            f"| {r.get('known', 0)} | {r['inserted']} | {r['activated']} | {r['rejected']} "
            f"| {r['waiting']} "
            f"| {r['mine_seconds']:.1f} | {r['gate_seconds']:.1f} |"
        )
    total = sum(r["seconds"] for r in rounds)
    gated = any(r.get("gated") for r in rounds)
    how = "through the regression gate" if gated else "directly (no gate)"
    lines += [
        "",
        f"{len(rounds)} rounds, {total:.1f} s in all (charged to no question's latency); "
        f"candidates activated {how}: {sum(r['activated'] for r in rounds)}",
    ]
    return lines


def timeout_line(results: Sequence[QuestionResult]) -> str | None:
    """One line on the predicts that ran past their timeout; None when none did."""
    late = [r for r in results if r.timed_out_after_s is not None]
    if not late:
        return None
    limits = "/".join(f"{t:g}" for t in sorted({r.timed_out_after_s or 0.0 for r in late}))
    longest = max(r.overrun_s for r in late)
    questions = "question" if len(late) == 1 else "questions"
    return (
        f"Timeouts: {len(late)} {questions} past {limits} s, answers discarded; a started "
        f"predict cannot be stopped, it ran on for up to {longest:.1f} s and the run waited for it"
    )


def alternative_lines(results: Sequence[QuestionResult]) -> list[str]:
    """EX of the answer against each alternative the system scored (its greedy candidate,
    say), on the questions that have that alternative; empty when there are none."""
    names = sorted({name for r in results if r.scores for name in r.alternative_scores})
    if not names:
        return []
    lines = [
        "| answer vs | n | answer EX | alternative EX | gain | answer won | answer lost |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name in names:
        pairs = [
            (r.scores["ex"], r.alternative_scores[name]["ex"])
            for r in results
            if r.scores is not None and name in r.alternative_scores
        ]
        answer = statistics.fmean(a for a, _ in pairs)
        other = statistics.fmean(b for _, b in pairs)
        lines.append(
            f"| {name} | {len(pairs)} | {answer:.3f} | {other:.3f} | {answer - other:+.3f} "
            f"| {sum(a > b for a, b in pairs)} | {sum(a < b for a, b in pairs)} |"
        )
    return lines


def _table(title: str, groups: dict[str, list[QuestionResult]]) -> list[str]:
    head = "| " + title + " | n | " + " | ".join(LABELS[m] for m in METRICS) + " |"
    lines = [head, "|---|---:|" + "---:|" * len(METRICS)]
    for name, members in groups.items():
        scores = mean_scores(members)
        n = sum(r.scored for r in members)
        lines.append(f"| {name} | {n} | " + " | ".join(f"{scores[m]:.3f}" for m in METRICS) + " |")
    return lines


def render_markdown(
    results: Sequence[QuestionResult],
    *,
    title: str,
    streaming: bool,
    mining: Sequence[dict[str, Any]] = (),
) -> str:
    scored = [r for r in results if r.scored]
    latencies = [r.latency_s for r in results]
    overall = mean_scores(scored)
    lines = [
        f"# {title}",
        "",
        f"Questions: {len(results)}, scored: {len(scored)}, "
        f"gold failed: {sum(r.gold_error is not None for r in results)}, "
        f"prediction errors: {sum(r.prediction_error is not None for r in results)}, "
        f"execution errors: {sum(r.execution_error is not None for r in results)}",
        "",
    ]
    timeouts = timeout_line(results)
    if timeouts:
        lines += [timeouts, ""]
    lines += [*_table("all", {"all": list(results)}), ""]
    lines += [*_table("difficulty", group_by(results, "difficulty")), ""]
    lines += [*_table("tag", group_by(results, "tag")), ""]
    lines += [
        "| latency | p50 | p90 | p99 | max |",
        "|---|---:|---:|---:|---:|",
        "| predict (s) | "
        + " | ".join(f"{percentile(latencies, q):.3f}" for q in (0.5, 0.9, 0.99, 1.0))
        + " |",
        "",
    ]
    alternatives = alternative_lines(results)
    if alternatives:
        lines += ["## The answer against the system's other answers", "", *alternatives, ""]
    lines += ["![scores by difficulty](scores_by_difficulty.png)", "", "![latency](latency.png)"]
    if streaming:
        curve = learning_curve(results)
        lines += [
            "",
            f"Learning curve: EX after {len(curve)} questions = {curve[-1] if curve else 0:.3f}",
            "",
            stream_line(stream_figures(results)),
            "",
            "![learning curve](learning_curve.png)",
        ]
    if mining:
        lines += ["", "## Mining rounds", "", *mining_lines(mining)]
    failed = [r for r in results if r.gold_error is not None][:20]
    if failed:
        lines += ["", "## Gold SQL that failed (left out of the scores)", ""]
        lines += [f"- `{r.id}`: {r.gold_error}" for r in failed]
    lines.append("\nOverall: " + ", ".join(f"{LABELS[m]} {overall[m]:.3f}" for m in METRICS))
    return "\n".join(lines) + "\n"


def write_plots(results: Sequence[QuestionResult], out_dir: Path, *, streaming: bool) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = group_by(results, "difficulty")
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.8 / len(METRICS)
    for i, metric in enumerate(METRICS):
        values = [mean_scores(members)[metric] for members in groups.values()]
        ax.bar([x + i * width for x in range(len(groups))], values, width, label=LABELS[metric])
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(groups))], list(groups))
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("score")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(out_dir / "scores_by_difficulty.png", dpi=100)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.hist([r.latency_s for r in results], bins=40)
    ax.set_xlabel("prediction latency (s)")
    ax.set_ylabel("questions")
    fig.tight_layout()
    fig.savefig(out_dir / "latency.png", dpi=100)
    plt.close(fig)

    if streaming:
        window = rolling_curve(results)
        fig, ax = plt.subplots(figsize=(7, 4))
        ax.plot(range(1, len(window) + 1), learning_curve(results), label="cumulative EX")
        ax.plot(range(1, len(window) + 1), window, label=f"EX over the last {WINDOW}", alpha=0.7)
        ax.set_xlabel("questions seen")
        ax.set_ylabel("EX")
        ax.set_ylim(0, 1.05)
        ax.legend()
        fig.tight_layout()
        fig.savefig(out_dir / "learning_curve.png", dpi=100)
        plt.close(fig)


def write_report(
    results: Sequence[QuestionResult], out_dir: Path, *, title: str, streaming: bool = False
) -> Path:
    """Write ``report.md`` and its PNG plots into ``out_dir``; return the report path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    write_plots(results, out_dir, streaming=streaming)
    path = out_dir / "report.md"
    text = render_markdown(results, title=title, streaming=streaming, mining=load_mining(out_dir))
    path.write_text(text, encoding="utf-8")
    return path
