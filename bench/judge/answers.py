"""The answers the judge scores, read from JSON lines.

*Insight answers* (InsightBench): ``{"task_id": "flag-1", "insights": ["...", ...],
"summary": "..."}`` (``id`` is accepted for ``task_id``; an insight may be an object with
``text`` or ``insight``).

*Analysis answers* (CORGI, BI-Bench, long-form DBQA), shaped like the analysis agent's answer:
``{"id": ..., "question": ..., "type": "diagnostic", "short_answer": ..., "findings":
[{"text": ...}, ...], "caveats": [...], "evidence": [{"id": "q1", "sql": ..., "error": null},
...], "plan": {"steps": [{"question": ..., "purpose": ...}]}, "reference": ..., "database":
"path/to.sqlite"}`` (``agents.analysis.models.AnalysisAnswer`` dumped as JSON, with ``id``,
``reference`` and ``database`` added where wanted; ``plan`` may also be a plain list); only
``question`` is required (an answer without an ``id`` is named by its line number).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.datasets.dataset import DatasetFormatError


@dataclass(frozen=True)
class InsightAnswer:
    """A system's insights and summary for one InsightBench task."""

    task_id: str
    insights: tuple[str, ...]
    summary: str


@dataclass(frozen=True)
class Evidence:
    """One query behind an analysis answer: its SQL and its error (None: it ran)."""

    sql: str
    error: str | None = None
    id: str | None = None


@dataclass(frozen=True)
class AnalysisAnswer:
    """A long-form answer to an analysis question, with what it was built from.

    ``plan``: the sub-questions the system planned; ``reference``: a reference answer to
    compare with, when the benchmark has one; ``database``: the SQLite file the answer is
    about (BI-Bench's fact checks run there).
    """

    id: str
    question: str
    type: str = ""
    short_answer: str = ""
    findings: tuple[str, ...] = ()
    caveats: tuple[str, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    plan: tuple[str, ...] = ()
    reference: str | None = None
    database: Path | None = None

    @property
    def text(self) -> str:
        """The answer as read: the short answer, each finding, then each caveat."""
        parts = (self.short_answer, *self.findings, *self.caveats)
        return "\n".join(part for part in parts if part.strip())


def read_json_lines(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """The objects of a JSON-lines file with their line numbers (blank lines skipped)."""
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise DatasetFormatError(path, f"invalid JSON: {err.msg}", line=number) from err
        if not isinstance(row, dict):
            raise DatasetFormatError(path, "expected a JSON object", line=number)
        rows.append((number, row))
    return rows


def read_insight_answers(path: Path | str) -> list[InsightAnswer]:
    """The insight answers in ``path``; :class:`DatasetFormatError` naming a bad line."""
    path = Path(path)
    answers = []
    for number, row in read_json_lines(path):
        task_id = row.get("task_id", row.get("id"))
        if not isinstance(task_id, str) or not task_id:
            raise DatasetFormatError(path, "missing task id", line=number, field="task_id")
        insights = row.get("insights", [])
        if not isinstance(insights, list):
            raise DatasetFormatError(path, "expected a list", line=number, field="insights")
        answers.append(
            InsightAnswer(
                task_id=task_id,
                insights=tuple(t for t in (_text(i) for i in insights) if t),
                summary=_text(row.get("summary")),
            )
        )
    return answers


def read_analysis_answers(path: Path | str) -> list[AnalysisAnswer]:
    """The analysis answers in ``path``; :class:`DatasetFormatError` naming a bad line."""
    path = Path(path)
    answers = []
    for number, row in read_json_lines(path):
        question = row.get("question")
        if not isinstance(question, str) or not question.strip():
            raise DatasetFormatError(path, "missing question", line=number, field="question")
        plan = row.get("plan") or []
        if isinstance(plan, dict):  # the analysis agent's AnalysisPlan
            plan = plan.get("steps", [])
        row = {**row, "plan": plan}
        for name in ("findings", "caveats", "evidence", "plan"):
            if not isinstance(row.get(name) or [], list):
                raise DatasetFormatError(path, "expected a list", line=number, field=name)
        database = row.get("database") or row.get("database_path")
        answers.append(
            AnalysisAnswer(
                id=str(row.get("id") or f"line-{number}"),
                question=question.strip(),
                type=str(row.get("type") or "").strip().lower(),
                short_answer=_text(row.get("short_answer")),
                findings=_texts(row.get("findings")),
                caveats=_texts(row.get("caveats")),
                evidence=tuple(_evidence(e) for e in row.get("evidence") or []),
                plan=tuple(_step(step) for step in row["plan"] if _step(step)),
                reference=_text(row.get("reference")) or None,
                database=Path(database) if isinstance(database, str) and database else None,
            )
        )
    return answers


def _text(value: Any) -> str:
    """A string, or the text of an object (``text``, ``insight``, ``question``); "" else."""
    if isinstance(value, dict):
        value = next((value[k] for k in ("text", "insight", "question") if k in value), "")
    return value.strip() if isinstance(value, str) else ""


def _texts(values: list[Any] | None) -> tuple[str, ...]:
    return tuple(text for text in (_text(value) for value in values or []) if text)


def _step(value: Any) -> str:
    """A plan step's text: its question, and its purpose after a dash when it has one."""
    text = _text(value)
    purpose = value.get("purpose") if isinstance(value, dict) else None
    if text and isinstance(purpose, str) and purpose.strip():
        return f"{text} — {purpose.strip()}"
    return text


def _evidence(value: Any) -> Evidence:
    if isinstance(value, str):
        return Evidence(sql=value)
    if not isinstance(value, dict):
        return Evidence(sql="", error="evidence entry is not an object")
    error = value.get("error")
    return Evidence(
        sql=str(value.get("sql") or ""),
        error=str(error) if error else None,
        id=str(value["id"]) if value.get("id") is not None else None,
    )
