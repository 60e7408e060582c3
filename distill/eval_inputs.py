"""What an evaluation of a trained student starts from: its GGUF, the base model, the questions.

- :func:`student_gguf`: the GGUF exported from a training run. ``almanac distill export``
  records it in the run directory (:func:`record_export`, ``RUN/export.json``) when the
  adapter it exports is the run's; otherwise ``RUN/export/student.gguf`` (the conventional
  ``--out RUN/export``) is looked for. A run without one is an :class:`EvalError` that says the
  command exporting it.
- :func:`base_model_of`: the model the student is compared with. The run's base folder was
  dequantized from a GGUF by ``almanac distill base``, which records its source
  (:func:`record_base_source`, ``almanac-source.json``): the packaged name when there was one
  (the cascade serves that file, the baseline to beat), else the GGUF's path.
- :class:`Sample`: the bench's question selection (``--split``, ``--limit``, ``--stratify``,
  ``--learn-split``), passed through to ``python -m bench run`` unchanged
  (:mod:`bench.distill_eval` runs the bench; ``distill`` sits below ``bench`` and imports none
  of it).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

EXPORT_RECORD = "export.json"
EXPORT_FOLDER = "export"
STUDENT_FILE = "student.gguf"
BASE_SOURCE = "almanac-source.json"


class EvalError(ValueError):
    """An evaluation that cannot run (names the run, file or option at fault)."""


@dataclass(frozen=True)
class Sample:
    """The questions a bench run answers: the dataset and ``python -m bench run``'s selection
    options, passed through unchanged."""

    dataset: str
    split: str | None = None
    limit: int | None = None
    stratify: int | None = None
    learn_split: str | None = None
    drop_failing_gold: bool = False

    @property
    def label(self) -> str:
        """A folder name for this sample, e.g. ``spider_dev-stratify120``."""
        path = Path(self.dataset)
        name = path.stem if path.exists() else self.dataset
        if path.exists() and name in ("questions", "test", "train"):  # AutoFin's files
            name = f"{path.parent.name}-{name}"
        parts = [name]
        if self.split:
            parts.append(self.split)
        if self.limit is not None:
            parts.append(f"limit{self.limit}")
        if self.stratify:
            parts.append(f"stratify{self.stratify}")
        if self.learn_split:
            parts.append(f"learn-{self.learn_split}")
        return "-".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def read_run_config(run_dir: Path) -> dict[str, Any]:
    """The training run's ``config.json``; EvalError when ``run_dir`` is not a run."""
    path = run_dir / "config.json"
    if not run_dir.is_dir():
        raise EvalError(f"no training run directory at {run_dir}")
    if not path.is_file():
        raise EvalError(
            f"{run_dir} is not a training run directory (no config.json; "
            "`almanac distill train CONFIG` writes one)"
        )
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise EvalError(f"{path} is not readable JSON: {exc}") from None


def record_export(run_dir: Path, gguf: Path, *, adapter: Path, dtype: str) -> Path:
    """Write ``RUN/export.json``: the exported GGUF of ``run_dir`` (absolute path)."""
    path = run_dir / EXPORT_RECORD
    record = {"gguf": str(gguf.resolve()), "adapter": str(adapter.resolve()), "dtype": dtype}
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return path


def run_of_adapter(adapter: Path) -> Path | None:
    """The training run ``adapter`` (``RUN/final`` or ``RUN/checkpoint-N``) belongs to."""
    run = adapter.resolve().parent
    return run if (run / "config.json").is_file() and (run / "metrics.jsonl").is_file() else None


def student_gguf(run_dir: Path, given: Path | None = None) -> Path:
    """The student's GGUF: ``given``, else the run's recorded or conventional export."""
    config = read_run_config(run_dir)
    if given is not None:
        if not given.is_file():
            raise EvalError(f"no GGUF file at {given}")
        return given
    record = run_dir / EXPORT_RECORD
    if record.is_file():
        path = Path(json.loads(record.read_text(encoding="utf-8"))["gguf"])
        if path.is_file():
            return path
        raise EvalError(f"{record} names {path}, which no longer exists; export the run again")
    conventional = run_dir / EXPORT_FOLDER / STUDENT_FILE
    if conventional.is_file():
        return conventional
    base = config.get("base_model", "BASE_MODEL_DIR")
    raise EvalError(
        f"{run_dir} has no exported GGUF; export it first with "
        f"`almanac distill export {run_dir / 'final'} --base {base} "
        f"--out {run_dir / EXPORT_FOLDER}`"
    )


def record_base_source(folder: Path, *, model: str | None, gguf: Path) -> Path:
    """Write ``almanac-source.json`` into a dequantized base folder: what it came from."""
    path = folder / BASE_SOURCE
    record = {"model": model, "gguf": str(gguf.resolve())}
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return path


def base_model_of(run_dir: Path) -> str:
    """The base model to compare the run's student with (packaged name or GGUF path)."""
    config = read_run_config(run_dir)
    folder = Path(str(config.get("base_model", "")))
    source = folder / BASE_SOURCE
    if source.is_file():
        record = json.loads(source.read_text(encoding="utf-8"))
        if record.get("model"):
            return str(record["model"])
        if record.get("gguf") and Path(record["gguf"]).is_file():
            return str(record["gguf"])
    raise EvalError(
        f"cannot tell which GGUF the base model {folder} of {run_dir} came from "
        f"(no {BASE_SOURCE}: it was not made by `almanac distill base`); "
        "name it with --base-model NAME_OR_GGUF"
    )
