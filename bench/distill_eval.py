"""The benchmark of a trained student against its base model (issue 24, item 5).

``evaluate(run_dir, sample)`` runs ``python -m bench run`` twice over the same questions,
with the same system (``almanac`` by default: the whole chain, its prompts unchanged) and only
the model changed: first the base model (a packaged name or a GGUF, :func:`base_model_of`),
then the student's exported GGUF (:func:`student_gguf`). Both runs go through the bench's own
parser and ``run_command``, so every option means what it means there and an interrupted run
resumes. A base run already holding every selected question (``base_out``, e.g. an earlier
evaluation's or a plain bench run's folder over the same sample and model) is reused as it is.
The two runs are then compared with ``bench compare`` (:func:`bench.compare.compare_runs`,
``comparison.md``) over the questions both scored, and ``eval.json`` records each model's
mean EX, Spider EX, soft-F1 and BF-β and the student's delta.

Layout (``out_dir``, by default ``RUN/eval/<sample label>``): ``base/`` (unless reused),
``student/``, ``comparison.md``, ``eval.json``. Progress: ``on_progress(phase, done, total)``
as each run's ``results.jsonl`` grows (polled; the bench's own bar shows on the terminal).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.compare import compare_runs, write_comparison
from bench.datasets import Dataset, MissingDatabaseError, load_dataset, require_databases
from bench.report import LABELS
from bench.run import COMMITS, load_results
from bench.sampling import stratified_sample
from distill.eval_inputs import EvalError, Sample, base_model_of, student_gguf

log = logging.getLogger(__name__)
EVAL_FOLDER = "eval"
RESULT = "eval.json"
REPORTED = ("ex", "spider_ex", "soft_f1", "bf_beta")
ProgressHook = Callable[[str, int, int], None]


@dataclass
class BenchOptions:
    """How each bench run answers: the system and its runtime options (the same for both)."""

    system: str = "almanac"
    threads: int | None = None
    timeout_s: float | None = None


@dataclass
class EvalResult:
    """What ``eval.json`` holds (see :meth:`to_dict`)."""

    run_dir: Path
    sample: Sample
    dataset: str
    out_dir: Path
    base_model: str
    base_out: Path
    base_reused: bool
    student_model: Path
    student_out: Path
    ids: list[str]
    base: dict[str, float]
    student: dict[str, float]
    comparison: Path
    won: int = 0
    lost: int = 0
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def delta(self) -> dict[str, float]:
        return {m: self.student[m] - self.base[m] for m in REPORTED}

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": str(self.run_dir),
            "dataset": self.dataset,
            "sample": self.sample.to_dict(),
            "questions": len(self.ids),
            "ids": self.ids,
            "base": {
                "model": self.base_model,
                "out": str(self.base_out),
                "reused": self.base_reused,
                "scores": self.base,
            },
            "student": {
                "model": str(self.student_model),
                "out": str(self.student_out),
                "scores": self.student,
                "won": self.won,
                "lost": self.lost,
            },
            "delta": self.delta,
            "comparison": str(self.comparison),
            "seconds": round(self.seconds, 1),
            **self.extra,
        }


def evaluate(
    run_dir: Path,
    sample: Sample,
    *,
    bench: BenchOptions | None = None,
    out_dir: Path | None = None,
    base_out: Path | None = None,
    base_model: str | None = None,
    student: Path | None = None,
    on_progress: ProgressHook | None = None,
    between: Callable[[], None] | None = None,
) -> EvalResult:
    """Bench the base model and the run's student on ``sample``; compare (module docstring).

    ``between`` is called before each phase (a job checks its cancellation there).
    """
    started = time.perf_counter()
    bench = bench or BenchOptions()
    gguf = student_gguf(run_dir, student)
    dataset, ids = select_questions(sample)
    out_dir = out_dir or run_dir / EVAL_FOLDER / sample.label
    base_out = base_out or out_dir / "base"
    student_out = out_dir / "student"
    recorded = _recorded_model(base_out)
    if base_model is not None and recorded is not None and base_model != recorded:
        raise EvalError(
            f"base run {base_out} is of model {recorded!r}, not {base_model!r}; "
            "give another base folder or leave the base model out"
        )
    base_model = base_model or recorded or base_model_of(run_dir)
    reused = base_out.is_dir() and _holds(base_out, ids, dataset, sample, bench)
    phases = [("student", str(gguf.resolve()), student_out)]
    if not reused:
        phases.insert(0, ("base", base_model, base_out))
    for phase, model, folder in phases:
        if between is not None:
            between()
        log.info("%s: %s on %d questions of %s into %s", phase, model, len(ids), dataset, folder)
        _run_bench(sample, bench, model, folder, phase, len(ids), on_progress)
        _check_answered(folder, ids, phase)
    if between is not None:
        between()
    return _compare(
        EvalResult(
            run_dir=run_dir,
            sample=sample,
            dataset=dataset,
            out_dir=out_dir,
            base_model=base_model,
            base_out=base_out,
            base_reused=reused,
            student_model=gguf,
            student_out=student_out,
            ids=[],
            base={},
            student={},
            comparison=out_dir / "comparison.md",
        ),
        ids,
        started,
    )


def select_questions(sample: Sample) -> tuple[str, list[str]]:
    """The dataset's name and the ids ``python -m bench run`` answers for ``sample``."""
    options: dict[str, Any] = {"drop_failing_gold": True} if sample.drop_failing_gold else {}
    try:
        dataset = load_dataset(sample.dataset, **options)
    except FileNotFoundError as exc:
        raise EvalError(f"unknown dataset: {exc}") from None
    databases = dataset.databases
    learned = dataset.filter(split=sample.learn_split).examples if sample.learn_split else []
    if sample.learn_split and not learned:
        raise EvalError(f"dataset {dataset.name} has no {sample.learn_split!r} split to learn")
    if sample.split or sample.limit is not None:
        dataset = dataset.filter(split=sample.split, limit=sample.limit)
    if sample.stratify:
        dataset = stratified_sample(dataset, sample.stratify)
    ids = [example.id for example in dataset]
    if not ids:
        raise EvalError(f"no questions in {sample.dataset} for {sample.to_dict()}")
    needed = Dataset(dataset.name, [*dataset.examples, *learned], databases)
    try:
        require_databases(needed, source=Path(sample.dataset))
    except MissingDatabaseError as exc:
        raise EvalError(str(exc)) from None
    return dataset.name, ids


def bench_argv(sample: Sample, bench: BenchOptions, model: str, out: Path) -> list[str]:
    """The ``python -m bench`` arguments of one run."""
    argv = ["run", "--dataset", sample.dataset, "--system", bench.system, "--model", model]
    argv += ["--out", str(out)]
    for flag, value in (
        ("--split", sample.split),
        ("--limit", sample.limit),
        ("--stratify", sample.stratify),
        ("--learn-split", sample.learn_split),
        ("--threads", bench.threads),
        ("--timeout", bench.timeout_s),
    ):
        if value is not None:
            argv += [flag, str(value)]
    if sample.drop_failing_gold:
        argv.append("--drop-failing-gold")
    return argv


def _run_bench(
    sample: Sample,
    bench: BenchOptions,
    model: str,
    out: Path,
    phase: str,
    total: int,
    on_progress: ProgressHook | None,
) -> None:
    # the bench's own parser: every option means what it means to `python -m bench run`
    from bench.__main__ import run_command
    from bench.cli_parser import build_parser

    argv = bench_argv(sample, bench, model, out)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit:  # argparse exits on a bad option; a job's worker must not
        raise EvalError(f"bench run of the {phase} model {model}: bad options {argv}") from None
    watcher = _Watcher(out / "results.jsonl", phase, total, on_progress)
    watcher.start()
    try:
        run_command(args)
    except KeyError as exc:  # an unknown system or model name
        raise EvalError(f"bench run of the {phase} model {model}: {exc.args[0]}") from None
    except ValueError as exc:  # e.g. the folder holds another run
        raise EvalError(f"bench run of the {phase} model {model}: {exc}") from None
    finally:
        watcher.stop()
    watcher.raise_error()


def _holds(folder: Path, ids: list[str], dataset: str, sample: Sample, bench: BenchOptions) -> bool:
    """Whether the bench run in ``folder`` answered every id of the same sample with the same
    chain (an EvalError when its manifest says another sample, system or chain option)."""
    manifest_path = folder / "run.json"
    if not manifest_path.is_file():
        return False
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    expected = {
        "dataset": dataset,
        "system": bench.system,
        "split": sample.split,
        "limit": sample.limit,
        "stratify": sample.stratify,
        "learn_split": sample.learn_split,
        "stream": None,
        "questions": len(ids),
        "small_model": None,
        "small_temperature": None,
        "small_max_tokens": None,
        "sliced_schema": False,
    }
    for key, value in expected.items():
        if manifest.get(key) != value:
            raise EvalError(
                f"base run {folder} is not over the same questions with the same chain: its "
                f"{key} is {manifest.get(key)!r}, this evaluation's {value!r}"
            )
    other = sorted(set(manifest) - set(expected) - {"model", COMMITS})
    if other:  # --data-dictionary, --cot, --synthesize, --mine-every...: another chain
        raise EvalError(f"base run {folder} ran with options this evaluation does not: {other}")
    answered = {r.id for r in load_results(folder / "results.jsonl")}
    return answered >= set(ids)


def _recorded_model(folder: Path) -> str | None:
    path = folder / "run.json"
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8")).get("model")


def _check_answered(folder: Path, ids: list[str], phase: str) -> None:
    answered = {r.id for r in load_results(folder / "results.jsonl")}
    missing = [i for i in ids if i not in answered]
    if missing:
        raise EvalError(f"the {phase} run in {folder} did not answer {missing[:5]}")


def _compare(result: EvalResult, ids: list[str], started: float) -> EvalResult:
    folders = [result.base_out, result.student_out]
    common, table = compare_runs(folders)
    result.comparison = write_comparison(folders, result.out_dir)
    result.ids = [i for i in common if i in set(ids)]
    base, student = table
    result.base = {m: base.scores[m] for m in REPORTED}
    result.student = {m: student.scores[m] for m in REPORTED}
    result.won, result.lost = student.won, student.lost
    result.extra = {
        "latency_p50_s": {"base": base.latency_p50, "student": student.latency_p50},
        "unscored": len(ids) - len(result.ids),
    }
    result.seconds = time.perf_counter() - started
    path = result.out_dir / RESULT
    path.write_text(json.dumps(result.to_dict(), indent=2) + "\n", encoding="utf-8")
    return result


def render(result: EvalResult) -> str:
    """The figures as a table: EX, soft-F1, BF-β (and Spider EX) of both and the delta."""
    head = " | ".join(LABELS[m] for m in REPORTED)
    rows = [
        f"{len(result.ids)} questions of {result.dataset} scored in both runs",
        f"| model | {head} |",
        "|---|" + "---:|" * len(REPORTED),
        f"| base ({result.base_model}) | "
        + " | ".join(f"{result.base[m]:.3f}" for m in REPORTED)
        + " |",
        f"| student ({result.student_model.name}) | "
        + " | ".join(f"{result.student[m]:.3f}" for m in REPORTED)
        + " |",
        "| delta (points) | "
        + " | ".join(f"{100 * result.delta[m]:+.1f}" for m in REPORTED)
        + " |",
        f"student won {result.won}, lost {result.lost} questions on EX; "
        f"comparison: {result.comparison}",
    ]
    return "\n".join(rows)


class _Watcher:
    """Reports a bench run's progress from its ``results.jsonl`` (polled in a thread); an
    error the hook raises (a cancelled job) stops the polling and is raised afterwards."""

    def __init__(self, path: Path, phase: str, total: int, hook: ProgressHook | None) -> None:
        self.path, self.phase, self.total, self.hook = path, phase, total, hook
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name=f"eval-{phase}", daemon=True)
        self._error: BaseException | None = None
        self._seen = -1

    def start(self) -> None:
        if self.hook is not None:
            self._report()
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        if self.hook is not None and self._error is None:
            self._report()

    def raise_error(self) -> None:
        if self._error is not None:
            raise self._error

    def _poll(self) -> None:
        while not self._stop.wait(1.0):
            if self._error is None:
                self._report()

    def _report(self) -> None:
        assert self.hook is not None
        try:
            lines = self.path.read_text(encoding="utf-8").count("\n") if self.path.exists() else 0
            done = min(lines, self.total)
            if done != self._seen:
                self._seen = done
                self.hook(self.phase, done, self.total)
        except BaseException as exc:  # handed to the caller's thread
            self._error = exc
