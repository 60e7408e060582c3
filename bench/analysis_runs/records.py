"""One output line per task: the judge's insight answer plus the whole analysis.

``answers.jsonl`` holds one JSON object per task: ``task_id``, ``insights`` (the findings'
texts; the short answer when the analysis has no finding) and ``summary`` (the short answer),
which :func:`bench.judge.answers.read_insight_answers` reads, and beside them ``system``,
``latency_s``, ``sql_calls``, ``error`` (why the task has no answer, None when it has one)
and ``analysis`` (the :class:`agents.analysis.models.AnalysisAnswer` as JSON).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Self, TypeVar

from pydantic import BaseModel, Field

from agents.analysis.models import AnalysisAnswer
from bench.datasets.dataset import DatasetFormatError

R = TypeVar("R", bound="TaskRecord")


class TaskRecord(BaseModel):
    """The answer to one task (or the error that left it without one)."""

    task_id: str
    system: str
    insights: list[str] = Field(default_factory=list)
    summary: str = ""
    latency_s: float = 0.0
    sql_calls: int = 0
    error: str | None = None
    analysis: dict[str, Any] | None = None

    @classmethod
    def of(cls, task_id: str, system: str, answer: AnalysisAnswer, latency_s: float) -> TaskRecord:
        """The record of ``answer``: its findings as the insights, its short answer as the
        summary (and as the one insight when there is no finding)."""
        insights = [f.text for f in answer.findings if f.text.strip()]
        if not insights and answer.short_answer.strip():
            insights = [answer.short_answer.strip()]
        return cls(
            task_id=task_id,
            system=system,
            insights=insights,
            summary=answer.short_answer.strip(),
            latency_s=round(latency_s, 3),
            sql_calls=answer.sql_calls,
            analysis=answer.model_dump(mode="json"),
        )

    @classmethod
    def failed(cls, task_id: str, system: str, error: str, latency_s: float) -> TaskRecord:
        return cls(task_id=task_id, system=system, error=error, latency_s=round(latency_s, 3))

    @classmethod
    def answered(cls, task: Any, system: str, answer: AnalysisAnswer, latency_s: float) -> Self:
        """The record of ``task``'s ``answer`` (the runner's hook; a subclass adds the
        task's own fields)."""
        return cls.of(task.id, system, answer, latency_s)

    @classmethod
    def failed_on(cls, task: Any, system: str, error: str, latency_s: float) -> Self:
        """The record of ``task`` left without an answer by ``error`` (the runner's hook)."""
        return cls.failed(task.id, system, error, latency_s)


def read_records(path: Path, record_type: type[R] = TaskRecord) -> list[R]:  # type: ignore[assignment]
    """The records in ``path`` (none when it does not exist), read as ``record_type``; a bad
    line is an error naming it, except a last line cut short (a run killed while writing),
    which is left out."""
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append(record_type.model_validate(json.loads(line)))
        except (json.JSONDecodeError, ValueError) as err:
            if number == len(lines):
                continue  # cut short: that task is answered again
            raise DatasetFormatError(path, f"not a task record: {err}", line=number) from err
    return records


def append_record(path: Path, record: TaskRecord) -> None:
    """Append ``record`` as one line and flush it to disk."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        out.write(record.model_dump_json() + "\n")
        out.flush()


def drop_cut_line(path: Path) -> bool:
    """Truncate ``path`` after its last newline (a line cut short when a run was killed
    mid-write); True when something was dropped."""
    if not path.exists():
        return False
    data = path.read_bytes()
    if not data or data.endswith(b"\n"):
        return False
    with path.open("r+b") as out:
        out.truncate(data.rfind(b"\n") + 1)
    return True
