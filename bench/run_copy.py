"""A copy of a recorded ``bench run`` folder whose answers gained what was computed after
the run (a confidence signal that did not exist when it was recorded), so that reports and
refits read it as they read the run. The run itself is never written."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tqdm import tqdm


def copy_run(
    run: Path, out: Path, amend: Callable[[dict], None], *, progress: str | None = None
) -> int:
    """Writes ``out/results.jsonl``: every answer of ``run/results.jsonl`` after ``amend``
    changed it in place; the run's other files (``run.json``, ...) are linked. Returns how
    many answers were copied; ``progress`` names a progress bar (none without it)."""
    source = run / "results.jsonl"
    if not source.is_file():
        raise FileNotFoundError(f"no results.jsonl in {run}")
    if out.resolve() == run.resolve():
        raise ValueError(f"--out {out} is the run itself: the copy must go elsewhere")
    lines = [line for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    out.mkdir(parents=True, exist_ok=True)
    with (out / "results.jsonl").open("w", encoding="utf-8") as sink:
        for line in tqdm(lines, desc=progress, unit="answer", disable=progress is None):
            row = json.loads(line)
            amend(row)
            sink.write(json.dumps(row, ensure_ascii=False) + "\n")
    for item in run.iterdir():
        target = out / item.name
        if item.name != "results.jsonl" and not target.exists():
            target.symlink_to(item.resolve())
    return len(lines)
