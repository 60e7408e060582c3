"""Calibration recordings written from bench runs (the format is
:mod:`agents.confidence.recorded_answers`).

A ``bench run`` or ``ask-unanswerable`` folder lives under ``bench/out`` with its LLM caches,
and is lost with the machine. What fitting and measuring a calibrator needs of it is small:
per answer its question id, its confidence signals, its scores, the confidence it carried and
what it cost. ``export_run`` and ``export_unanswerable`` write that to a recording;
``agents/confidence/recordings/`` holds the ones the packaged calibrator is fitted on, so that
``python -m bench.calibration report NAME=agents/confidence/recordings/NAME.jsonl.gz ...
--write`` fits it again on any machine, a later session adds sets instead of recording all of
them anew, and a deployment's refit pools them with its own verified answers.

    python -m bench.calibration export --run bench/out/s58-spider300-greedy \\
        --set spider300 --out agents/confidence/recordings/spider300.jsonl.gz
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agents.confidence.recorded_answers import (
    UNANSWERABLE,
    RecordedAnswersError,
    is_correct,
    read_recording,
    write_recording,
)
from bench.calibration_tables import Scored
from bench.run import COMMITS, load_results, with_source_commit

ASKED_COMMITS = "commits.json"  # an ask-unanswerable folder: the commits that asked


def export_run(
    folder: Path, set_name: str, out: Path, *, commits: list[str] | None = None, command: str = ""
) -> int:
    """Write the scored answers of a ``bench run`` folder to ``out``; the number written.

    The commits are the run's own (``run.json``, written since they were recorded) unless
    given; a run with neither is refused: a recording must say what code answered."""
    manifest = _read_json(folder / "run.json")
    commits = commits or list(manifest.get(COMMITS) or [])
    rows = []
    for result in load_results(folder / "results.jsonl"):
        if result.scores is None:  # the gold failed: not scored, not a calibration answer
            continue
        meta = result.system_metadata
        rows.append(
            {
                "id": result.id,
                "database": result.database,
                "signals": meta.get("signals") or {},
                "scores": result.scores,
                "confidence": meta.get("confidence"),
                "seconds": result.latency_s,
            }
        )
    return _write(out, set_name, "run", manifest, commits, command, rows, folder)


def note_commit(folder: Path) -> None:
    """Add the code's commit to ``folder/commits.json`` (an ask-unanswerable folder; a
    resumed one may add a second)."""
    path = folder / ASKED_COMMITS
    commits = json.loads(path.read_text(encoding="utf-8")) if path.exists() else []
    updated = with_source_commit(commits)
    if updated != commits:
        path.write_text(json.dumps(updated) + "\n", encoding="utf-8")


def export_unanswerable(
    folder: Path,
    out: Path,
    *,
    commits: list[str] | None = None,
    command: str = "",
    set_name: str = UNANSWERABLE,
) -> int:
    """Write the answers of an ``ask-unanswerable`` folder to ``out``; the number written.
    The commits are the folder's own (``commits.json``) unless given."""
    path = folder / "unanswerable.jsonl"
    if not path.exists():
        raise RecordedAnswersError(
            f"{folder}: no unanswerable.jsonl (not an ask-unanswerable folder)"
        )
    asked = folder / ASKED_COMMITS
    if not commits and asked.exists():
        commits = json.loads(asked.read_text(encoding="utf-8"))
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            meta = row.get("metadata") or {}
            rows.append(
                {
                    "id": row["id"],
                    "database": row.get("database"),
                    "category": row.get("category"),
                    "signals": meta.get("signals") or {},
                    "confidence": meta.get("confidence"),
                    "seconds": row.get("seconds", 0.0),
                }
            )
    return _write(out, set_name, UNANSWERABLE, {}, commits or [], command, rows, folder)


def read_scored(path: Path, name: str | None = None, metric: str = "ex") -> list[Scored]:
    """The answers of a recording as the calibration report reads them, in the set ``name``
    (default: the recording's own).
    A run's answer is right when its score under ``metric`` is 1 (``ex`` where it has no
    such score); an unanswerable set's are all wrong and keep that set's name."""
    header, rows = read_recording(path)
    unanswerable = header.get("kind") == UNANSWERABLE
    return [
        Scored(
            UNANSWERABLE if unanswerable else name or header["set"],
            row["id"],
            {k: float(v) for k, v in row["signals"].items()},
            is_correct(header, row, metric),
            row.get("confidence"),
            float(row.get("seconds") or 0.0),
        )
        for row in rows
    ]


def _write(
    out: Path,
    set_name: str,
    kind: str,
    manifest: dict[str, Any],
    commits: list[str],
    command: str,
    rows: list[dict[str, Any]],
    folder: Path,
) -> int:
    if not commits:
        raise RecordedAnswersError(
            f"{folder}: the commits it was recorded at are unknown (no 'commits' in its "
            "run.json or commits.json): give them with --commit"
        )
    if not rows:
        raise RecordedAnswersError(f"{folder}: no scored answers to record")
    header = {
        "set": set_name,
        "kind": kind,
        "commits": commits,
        "manifest": manifest,
        "command": command,
    }
    write_recording(out, header, rows)
    return len(rows)


def _read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise RecordedAnswersError(f"{path.parent}: no run.json (not a bench run folder)")
    return json.loads(path.read_text(encoding="utf-8"))
