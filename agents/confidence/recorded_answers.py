"""Recorded answers: the verified answers a packaged calibrator was fitted on, kept as files.

A recording is gzipped JSON lines: a header (``format``, the set's ``name``, its ``kind``,
``run`` or ``unanswerable``, the number of ``answers``, the ``commits`` that answered, the
``command`` and the run's ``manifest``), then one line per answer with its question ``id``,
``database``, confidence ``signals``, ``scores`` (a run's: ``ex`` and, for Spider,
``spider_ex``; an unanswerable set has none, every answer is wrong), the ``confidence`` it
carried and its ``seconds``. No question text and no SQL: only what fitting needs.

``bench.calibration export`` writes them from bench runs; the packaged ones lie in
:data:`PACKAGED_FOLDER` beside the packaged calibrator, which names the ones it was fitted on
(``Calibrator.recordings``). A deployment's refit (:mod:`agents.confidence.refit`) fits on
those answers and its own verified ones together, as the bench's pooled figure is measured.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMAT = 1
SUFFIX = ".jsonl.gz"
UNANSWERABLE = "unanswerable"
PACKAGED_FOLDER = Path(__file__).resolve().parent / "recordings"


class RecordedAnswersError(ValueError):
    """A recording that cannot be written or read (the path and the reason in the text)."""


@dataclass
class FittingAnswers:
    """Signals and verdicts to fit a calibrator on, and the recordings they came from."""

    rows: list[dict[str, float]] = field(default_factory=list)
    labels: list[bool] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.labels)


def is_recording(path: Path) -> bool:
    """Whether ``path`` names a recording file (rather than, say, a run folder)."""
    return path.name.endswith(SUFFIX)


def write_recording(path: Path, header: dict[str, Any], rows: Sequence[dict[str, Any]]) -> None:
    """Write ``rows`` after ``header`` (format and answer count added). The same answers give
    the same bytes (no name or time in the gzip header), so a re-export shows no diff."""
    if not is_recording(path):
        raise RecordedAnswersError(f"{path}: a recording's name ends with {SUFFIX}")
    if not rows:
        raise RecordedAnswersError(f"{path}: no answers to record")
    full = {**header, "format": FORMAT, "answers": len(rows)}
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as gz:
        for line in (full, *rows):
            gz.write((json.dumps(line, sort_keys=True) + "\n").encode("utf-8"))


def read_recording(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A recording's header and answer rows, checked."""
    if not path.exists():
        raise RecordedAnswersError(f"{path}: no such recording")
    try:
        with gzip.open(path, "rt", encoding="utf-8") as stream:
            lines = [json.loads(line) for line in stream if line.strip()]
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordedAnswersError(f"{path}: not a readable recording ({exc})") from exc
    if not lines or not isinstance(lines[0], dict) or lines[0].get("format") != FORMAT:
        raise RecordedAnswersError(f"{path}: no recording header of format {FORMAT}")
    header, rows = lines[0], lines[1:]
    if len(rows) != header.get("answers"):
        raise RecordedAnswersError(
            f"{path}: header says {header.get('answers')} answers, holds {len(rows)}"
        )
    if not all(isinstance(row, dict) and isinstance(row.get("signals"), dict) for row in rows):
        raise RecordedAnswersError(f"{path}: an answer without signals")
    return header, rows


def is_correct(header: dict[str, Any], row: dict[str, Any], metric: str = "ex") -> bool:
    """Whether a recorded answer was right: its score under ``metric`` (``ex`` where it has
    no such score) is 1; an unanswerable set's answers never are."""
    if header.get("kind") == UNANSWERABLE:
        return False
    scores = row.get("scores") or {}
    return float(scores.get(metric, scores.get("ex", 0.0))) >= 1.0


def fitting_answers(paths: Iterable[Path], metric: str = "ex") -> FittingAnswers:
    """Every answer of the recordings at ``paths``, as rows and verdicts to fit on."""
    found = FittingAnswers()
    for path in paths:
        header, rows = read_recording(path)
        for row in rows:
            found.rows.append({k: float(v) for k, v in row["signals"].items()})
            found.labels.append(is_correct(header, row, metric))
        found.sources.append(path.name)
    return found


def packaged_answers(names: Sequence[str], folder: Path = PACKAGED_FOLDER) -> FittingAnswers:
    """The answers of the packaged recordings ``names`` (what ``Calibrator.recordings`` of
    the packaged calibrator lists)."""
    return fitting_answers(folder / name for name in names)
