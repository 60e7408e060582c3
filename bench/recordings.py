"""Calibration recordings: the answers a calibrator is fitted on, kept in the repository.

A ``bench run`` or ``ask-unanswerable`` folder lives under ``bench/out`` with its LLM caches,
and is lost with the machine. What fitting and measuring a calibrator needs of it is small:
per answer its question id, its confidence signals, its scores (or, for the unanswerable set,
nothing: every answer is wrong), the confidence it carried and what it cost. A recording is
that, one gzipped JSON line per answer after a header line that says where the answers came
from (the set's name, the run's manifest, the commits it was recorded at, the command).
``bench/recordings/`` holds the ones the packaged calibrator is fitted on, so that
``python -m bench.calibration report NAME=bench/recordings/NAME.jsonl.gz ... --write`` fits
it again on any machine, and a later session adds sets instead of recording all of them anew.

    python -m bench.calibration export --run bench/out/s58-spider300-greedy \\
        --set spider300 --out bench/recordings/spider300.jsonl.gz
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from bench.calibration_tables import UNANSWERABLE, Scored
from bench.run import COMMITS, load_results, source_commit

FORMAT = 1
SUFFIX = ".jsonl.gz"
ASKED_COMMITS = "commits.json"  # an ask-unanswerable folder: the commits that asked


class RecordingError(ValueError):
    """A recording that cannot be written or read (the path and the reason in the text)."""


def is_recording(path: Path) -> bool:
    """Whether ``path`` names a recording file rather than a run folder."""
    return path.name.endswith(SUFFIX)


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
    current = source_commit()
    if current is not None and current not in commits:
        path.write_text(json.dumps([*commits, current]) + "\n", encoding="utf-8")


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
        raise RecordingError(f"{folder}: no unanswerable.jsonl (not an ask-unanswerable folder)")
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


def read_recording(path: Path, metric: str = "ex") -> tuple[str, list[Scored]]:
    """The set name and the answers of a recording. A run's answer is right when its score
    under ``metric`` is 1 (``ex`` where it has no such score, as :func:`bench.calibration.
    read_run` does); an unanswerable set's answers are all wrong."""
    header, rows = read_rows(path)
    unanswerable = header["kind"] == UNANSWERABLE
    found = []
    for row in rows:
        scores = row.get("scores") or {}
        correct = False if unanswerable else scores.get(metric, scores.get("ex", 0.0)) >= 1.0
        found.append(
            Scored(
                UNANSWERABLE if unanswerable else header["set"],
                row["id"],
                {k: float(v) for k, v in row["signals"].items()},
                correct,
                row.get("confidence"),
                float(row.get("seconds") or 0.0),
            )
        )
    return header["set"], found


def read_rows(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A recording's header and answer rows, checked."""
    if not path.exists():
        raise RecordingError(f"{path}: no such recording")
    try:
        with gzip.open(path, "rt", encoding="utf-8") as stream:
            lines = [json.loads(line) for line in stream if line.strip()]
    except (OSError, EOFError, json.JSONDecodeError) as exc:
        raise RecordingError(f"{path}: not a readable recording ({exc})") from exc
    if not lines or lines[0].get("format") != FORMAT:
        raise RecordingError(f"{path}: no recording header of format {FORMAT}")
    header, rows = lines[0], lines[1:]
    if len(rows) != header.get("answers"):
        raise RecordingError(
            f"{path}: header says {header.get('answers')} answers, holds {len(rows)}"
        )
    return header, rows


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
        raise RecordingError(
            f"{folder}: the commits it was recorded at are unknown (no 'commits' in its "
            "run.json or commits.json): give them with --commit"
        )
    if not rows:
        raise RecordingError(f"{folder}: no scored answers to record")
    if not is_recording(out):
        raise RecordingError(f"{out}: a recording's name ends with {SUFFIX}")
    header = {
        "format": FORMAT,
        "set": set_name,
        "kind": kind,
        "answers": len(rows),
        "commits": commits,
        "manifest": manifest,
        "command": command,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    # no name, mtime 0: the same answers give the same bytes, so a re-export shows no diff
    with (
        out.open("wb") as raw,
        gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as packed,
    ):
        for line in (header, *rows):
            packed.write((json.dumps(line, sort_keys=True) + "\n").encode("utf-8"))
    return len(rows)


def _read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise RecordingError(f"{path.parent}: no run.json (not a bench run folder)")
    return json.loads(path.read_text(encoding="utf-8"))
