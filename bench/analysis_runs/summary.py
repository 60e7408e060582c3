"""The run's figures: latency per answer (p50, p90), SQL calls per answer (mean, p50),
findings, errors, and ROUGE-1 when given (:mod:`bench.analysis_runs.rouge`); written as
``summary.json`` and ``summary.md``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.analysis_runs.records import TaskRecord


def summarize(records: Sequence[TaskRecord]) -> dict[str, Any]:
    """The figures of ``records`` (the answered tasks' latency and SQL calls; errors apart)."""
    answered = [r for r in records if r.error is None]
    latency = [r.latency_s for r in answered]
    calls = [r.sql_calls for r in answered]
    analyses = [r.analysis or {} for r in answered]
    return {
        "tasks": len(records),
        "answered": len(answered),
        "errors": len(records) - len(answered),
        "latency_s": _spread(latency, (50, 90)),
        "sql_calls": {"mean": _mean(calls), **_spread(calls, (50,))},
        "insights_per_answer": _mean([len(r.insights) for r in answered]),
        "narrative_by": _counts(a.get("narrative_by", "none") for a in analyses),
        "types": _counts(a.get("type", "") for a in analyses),
        "dropped_findings": sum(len(a.get("dropped") or []) for a in analyses),
        "failed_subquestions": sum(
            1 for a in analyses for e in a.get("evidence") or [] if e.get("error")
        ),
    }


def write_summary(out_dir: Path, system: str, summary: dict[str, Any]) -> Path:
    """``summary.json`` and ``summary.md`` in ``out_dir``; the markdown's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    path = out_dir / "summary.md"
    path.write_text(markdown(system, summary))
    return path


def markdown(system: str, summary: dict[str, Any]) -> str:
    """The summary as a short markdown report."""
    latency, calls = summary["latency_s"], summary["sql_calls"]
    lines = [
        f"# Analysis run: {system}",
        "",
        f"- tasks: {summary['tasks']} ({summary['answered']} answered, {summary['errors']} errors)",
        f"- latency per answer: p50 {_fmt(latency.get('p50'))} s, p90 {_fmt(latency.get('p90'))} s",
        f"- SQL calls per answer: mean {_fmt(calls.get('mean'))}, p50 {_fmt(calls.get('p50'))}",
        f"- insights per answer: {_fmt(summary['insights_per_answer'])}",
        f"- narrative by: {summary['narrative_by']}",
        f"- question types: {summary['types']}",
        f"- findings dropped by the number check: {summary['dropped_findings']}",
        f"- sub-questions without rows: {summary['failed_subquestions']}",
    ]
    rouge = summary.get("rouge")
    if rouge:
        lines.append(
            f"- ROUGE-1 ({rouge['tasks']} tasks): insight level "
            f"{_fmt(rouge['rouge1_insight'])}, summary level {_fmt(rouge['rouge1_summary'])}"
        )
    return "\n".join(lines) + "\n"


def _spread(values: Sequence[float], percentiles: tuple[int, ...]) -> dict[str, float | None]:
    if not values:
        return {f"p{p}": None for p in percentiles}
    return {f"p{p}": round(float(np.percentile(values, p)), 3) for p in percentiles}


def _mean(values: Sequence[float]) -> float | None:
    return round(float(np.mean(values)), 3) if values else None


def _counts(values: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for value in values:
        counts[str(value)] = counts.get(str(value), 0) + 1
    return dict(sorted(counts.items()))


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:g}"
