"""``almanac distill eval`` and the ``distill-eval`` job end to end: the tiny student of the
loop test, exported, against its untrained base as a GGUF, through the bench's ``almanac``
chain on three concert_singer questions of Spider dev. The tiny models answer garbage (EX 0);
what is checked is that both answered the same questions and the report's figures."""

from __future__ import annotations

import contextlib
import io
import json
import math
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench.datasets import load_dataset
from bench.datasets.almanac_jsonl import write_jsonl
from distill.eval_inputs import EXPORT_RECORD
from distill.export import write_gguf
from server.cli_distill import run_distill_command
from server.job_distill import DistillEvalParams, run_distill_eval
from server.settings import load_settings
from tests.distill import test_loop
from tests.distill.conftest import DB
from tests.distill.test_cli_jobs import Context, parse

pytestmark = pytest.mark.slow
trained = test_loop.trained  # the loop's fixture: the tiny student after 8 LoRA steps
FIGURES = ("ex", "spider_ex", "soft_f1", "bf_beta")


class JobContext(Context):
    """A job context that also counts its cancellation checks."""

    checks = 0

    def check(self) -> None:
        self.checks += 1


@pytest.fixture(scope="module")
def setup(trained, tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """The run exported through the CLI, the base as a GGUF in an import folder, and three
    concert_singer questions as a dataset file there."""
    config, _ = trained
    root = tmp_path_factory.mktemp("eval")
    imports = root / "data" / "imports"
    imports.mkdir(parents=True)
    argv = ["distill", "export", str(config.output_dir / "final")]
    argv += ["--base", str(config.base_model), "--out", str(root / "export"), "--dtype", "f32"]
    assert run_distill_command(parse(argv), None) == 0
    base = write_gguf(config.base_model, imports / "base.gguf", dtype="f32")
    spider = load_dataset("spider_dev").filter(database=DB, limit=3)
    write_jsonl(spider.examples, imports / "concert3.jsonl")
    return SimpleNamespace(
        run=config.output_dir,
        base=base.resolve(),
        dataset=imports / "concert3.jsonl",
        ids=[e.id for e in spider.examples],
        data_dir=root / "data",
        root=root,
    )


def ids_of(folder: Path) -> list[str]:
    lines = (folder / "results.jsonl").read_text().splitlines()
    return sorted(json.loads(line)["id"] for line in lines)


def check_figures(scores: dict[str, float]) -> None:
    assert set(FIGURES) <= set(scores)
    for name in FIGURES:
        value = scores[name]
        assert isinstance(value, float) and not math.isnan(value) and 0.0 <= value <= 1.0, name


def eval_cli(setup, *extra: str) -> str:
    """Run ``almanac distill eval`` on the run and the three questions; what it printed."""
    argv = ["distill", "eval", str(setup.run), "--dataset", str(setup.dataset), "--timeout", "60"]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert run_distill_command(parse([*argv, *extra]), None) == 0
    return printed.getvalue()


@pytest.fixture(scope="module")
def first(setup) -> SimpleNamespace:
    """The first evaluation: both models benched, into the run's default eval folder."""
    printed = eval_cli(setup, "--base-model", str(setup.base))
    out = setup.run / "eval" / "concert3"
    return SimpleNamespace(out=out, printed=printed)


def test_export_records_the_gguf_in_the_run(setup):
    record = json.loads((setup.run / EXPORT_RECORD).read_text())
    assert record["gguf"] == str((setup.root / "export" / "student.gguf").resolve())


def test_eval_benches_base_and_student_on_the_same_questions(setup, first):
    out, printed = first.out, first.printed
    report = json.loads((out / "eval.json").read_text())
    assert report["questions"] == 3 and sorted(report["ids"]) == sorted(setup.ids)
    assert ids_of(out / "base") == ids_of(out / "student") == sorted(setup.ids)
    assert report["base"]["model"] == str(setup.base) and not report["base"]["reused"]
    assert report["student"]["model"] == str((setup.root / "export" / "student.gguf").resolve())
    check_figures(report["base"]["scores"])
    check_figures(report["student"]["scores"])
    for name in FIGURES:
        delta = report["student"]["scores"][name] - report["base"]["scores"][name]
        assert report["delta"][name] == pytest.approx(delta)
    comparison = (out / "comparison.md").read_text()
    assert "| base |" in comparison and "| student |" in comparison
    assert "3 questions scored in every run" in comparison
    progress = ("base: 0/3", "base: 3/3", "student: 0/3", "student: 3/3")
    for label in ("EX", "soft-F1", "BF-β", "delta (points)", *progress):
        assert label in printed, label


def test_a_base_run_holding_every_question_is_reused(setup, first):
    base = first.out / "base"
    before = (base / "results.jsonl").read_bytes()
    printed = eval_cli(setup, "--base-out", str(base), "--out", str(setup.root / "again"))
    assert f"base: reused {base}" in printed and "base: 0/3" not in printed
    assert (base / "results.jsonl").read_bytes() == before
    report = json.loads((setup.root / "again" / "eval.json").read_text())
    assert report["base"]["reused"] and report["base"]["model"] == str(setup.base)
    assert ids_of(setup.root / "again" / "student") == sorted(setup.ids)


def test_the_distill_eval_job_reports_progress_and_the_figures(setup, first):
    runs = setup.data_dir / "distill" / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    link = runs / "tiny"
    if not link.exists():
        link.symlink_to(setup.run, target_is_directory=True)
    shared = setup.data_dir / "distill" / "bench" / "concert3-almanac-base"
    if not shared.exists():  # the CLI's base run, reused by the job
        shutil.copytree(first.out / "base", shared)
    state = SimpleNamespace(settings=load_settings(data_dir=setup.data_dir))
    context = JobContext()
    params = DistillEvalParams(run="tiny", dataset="concert3.jsonl", base_model="base.gguf")
    result = run_distill_eval(state, context, params)
    assert result["questions"] == 3 and result["base"]["model"] == str(setup.base)
    assert result["base"]["out"] == str(shared)
    check_figures(result["student"]["scores"])
    messages = [m for _, m in context.reports if m]
    # the base run was reused; the student's resumed the CLI's (same run, same sample)
    assert messages == ["student: 3/3 questions answered"]
    assert context.checks == 2  # before the student's bench run and before comparing
    assert "student against" in context.lines[-1] and "points" in context.lines[-1]
