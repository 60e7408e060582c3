"""A judge run's results on disk: ``scores.json`` and a markdown table (``report.md``)."""

from __future__ import annotations

import json
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

METRICS: dict[str, tuple[str, ...]] = {
    "insightbench": (
        "tasks", "answered", "judge_insight", "rouge_insight", "judge_summary", "rouge_summary",
        "failed_calls",
    ),
    "corgi": ("answers", "score", "sql_success", "failed_calls"),
    "bibench": (
        "answers", "factual_correctness", "answerability", "relevance", "presentation",
        "failed_calls",
    ),
    "dbqa": (
        "answers", "plan_perfect", "sql_perfect", "synthesis_perfect", "all_perfect", "match",
        "failed_calls",
    ),
}  # fmt: skip


def _cell(value: Any) -> str:
    if value is None:
        return "–"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def markdown(protocol: str, judge: str, summary: dict[str, Any]) -> str:
    """The run's figures as a markdown table: all answers, then one row per question type."""
    names = METRICS[protocol]
    rows = [("all", summary), *sorted(summary.get("by_type", {}).items())]
    lines = [
        f"# {protocol} judge scores",
        "",
        f"Judge: `{judge}`",
        "",
        "| group | " + " | ".join(names) + " |",
        "|---" * (len(names) + 1) + "|",
    ]
    for group, row in rows:
        cells = " | ".join(_cell(row.get(name)) for name in names)
        lines.append(f"| {group or '(untyped)'} | {cells} |")
    if protocol == "corgi":
        dims = summary.get("dimensions", {})
        lines += ["", "| dimension | mean (0–5) |", "|---|---|"]
        lines += [f"| {name} | {_cell(value)} |" for name, value in dims.items()]
    return "\n".join(lines) + "\n"


def _plain(item: Any) -> Any:
    return asdict(item) if is_dataclass(item) and not isinstance(item, type) else item


def write_results(
    out: Path, protocol: str, judge: str, summary: dict[str, Any], items: list[Any]
) -> None:
    """``scores.json`` (the summary and every item's scores) and ``report.md`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    payload = {
        "protocol": protocol,
        "judge": judge,
        "summary": summary,
        "items": [_plain(item) for item in items],
    }
    (out / "scores.json").write_text(json.dumps(payload, indent=2, default=str) + "\n")
    (out / "report.md").write_text(markdown(protocol, judge, summary))
