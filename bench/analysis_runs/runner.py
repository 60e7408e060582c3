"""Runs a system over analysis tasks into ``answers.jsonl``: resumable, one error per task.

A task already in the output is skipped (a rerun answers only the missing ones; a line cut
short by a killed run is dropped first). A task whose answer raises is recorded with its
error and the run goes on. The records are appended one by one, so a run can be stopped at
any time.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from tqdm import tqdm

from agents.analysis.models import AnalysisAnswer
from bench.analysis_runs.records import TaskRecord, append_record, drop_cut_line, read_records

log = logging.getLogger(__name__)
ANSWERS = "answers.jsonl"
R = TypeVar("R", bound=TaskRecord)


class TaskAnswerer(Protocol):
    name: str

    def answer(self, task: Any) -> AnalysisAnswer: ...


def run_tasks(
    tasks: Sequence[Any],
    system: TaskAnswerer,
    out_dir: Path,
    *,
    clock: Callable[[], float] = time.monotonic,
    record_type: type[R] = TaskRecord,  # type: ignore[assignment]
) -> list[R]:
    """Answer each task (anything with an ``id``: an InsightBench task, an AutoFin
    question) not yet in ``out_dir/answers.jsonl``, each line a ``record_type``; every
    record of the file afterwards (those of earlier runs included), in file order."""
    path = out_dir / ANSWERS
    if drop_cut_line(path):
        log.warning("%s: dropped a line cut short; that task is answered again", path)
    done = {record.task_id for record in read_records(path, record_type)}
    todo = [task for task in tasks if task.id not in done]
    if done:
        log.info("analysis run: %d tasks already answered in %s", len(tasks) - len(todo), path)
    for task in tqdm(todo, desc=f"analysing ({system.name})", unit="task"):
        began = clock()
        try:
            answer = system.answer(task)
        except Exception as exc:  # one task's failure must not end the run
            log.warning("analysis run: %s failed: %s", task.id, exc, exc_info=True)
            error = f"{type(exc).__name__}: {exc}"
            record = record_type.failed_on(task, system.name, error, clock() - began)
        else:
            record = record_type.answered(task, system.name, answer, clock() - began)
        append_record(path, record)
    return read_records(path, record_type)
