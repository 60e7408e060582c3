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
from typing import Protocol

from tqdm import tqdm

from agents.analysis.models import AnalysisAnswer
from bench.analysis_runs.records import TaskRecord, append_record, drop_cut_line, read_records
from bench.datasets.insightbench import InsightTask

log = logging.getLogger(__name__)
ANSWERS = "answers.jsonl"


class TaskAnswerer(Protocol):
    name: str

    def answer(self, task: InsightTask) -> AnalysisAnswer: ...


def run_tasks(
    tasks: Sequence[InsightTask],
    system: TaskAnswerer,
    out_dir: Path,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> list[TaskRecord]:
    """Answer each task not yet in ``out_dir/answers.jsonl``; every record of the file
    afterwards (those of earlier runs included), in file order."""
    path = out_dir / ANSWERS
    if drop_cut_line(path):
        log.warning("%s: dropped a line cut short; that task is answered again", path)
    done = {record.task_id for record in read_records(path)}
    todo = [task for task in tasks if task.id not in done]
    if done:
        log.info("analysis run: %d tasks already answered in %s", len(tasks) - len(todo), path)
    for task in tqdm(todo, desc=f"analysing ({system.name})", unit="task"):
        began = clock()
        try:
            answer = system.answer(task)
        except Exception as exc:  # one task's failure must not end the run
            log.warning("analysis run: %s failed: %s", task.id, exc, exc_info=True)
            record = TaskRecord.failed(
                task.id, system.name, f"{type(exc).__name__}: {exc}", clock() - began
            )
        else:
            record = TaskRecord.of(task.id, system.name, answer, clock() - began)
        append_record(path, record)
    return read_records(path)
