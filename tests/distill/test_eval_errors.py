"""``almanac distill eval``'s inputs and refusals, before any model loads: a run without an
exported GGUF, an unknown dataset, a base model that cannot be told, a base run of other
questions or another model; the bench arguments each run gets; the job's parameters."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from agents.llm.models import ModelError
from bench.distill_eval import BenchOptions, bench_argv, evaluate
from distill.eval_inputs import (
    EvalError,
    Sample,
    base_model_of,
    record_base_source,
    record_export,
    run_of_adapter,
    student_gguf,
)
from server.cli import main as cli_main
from server.job_distill import DistillEvalParams, run_distill_eval
from server.settings import load_settings
from tests.distill.test_cli_jobs import Context


def make_run(folder: Path, base: Path | None = None, exported: bool = False) -> Path:
    """A run directory as ``distill train`` leaves it (config and metrics; no weights)."""
    folder.mkdir(parents=True)
    config = {"base_model": str(base or folder.parent / "base"), "output_dir": str(folder)}
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "metrics.jsonl").write_text("")
    if exported:
        (folder / "export").mkdir()
        (folder / "export" / "student.gguf").write_bytes(b"GGUF")
    return folder


def test_a_run_without_an_exported_gguf_names_the_export_command(tmp_path):
    run = make_run(tmp_path / "run", base=tmp_path / "base-hf")
    with pytest.raises(EvalError) as error:
        student_gguf(run)
    message = str(error.value)
    assert "has no exported GGUF" in message
    assert f"almanac distill export {run / 'final'} --base {tmp_path / 'base-hf'}" in message
    assert f"--out {run / 'export'}" in message


def test_not_a_run_and_a_stale_export_record_are_clear_errors(tmp_path):
    with pytest.raises(EvalError, match="no training run directory"):
        student_gguf(tmp_path / "missing")
    (tmp_path / "plain").mkdir()
    with pytest.raises(EvalError, match="not a training run directory"):
        student_gguf(tmp_path / "plain")
    run = make_run(tmp_path / "run")
    record_export(run, tmp_path / "gone.gguf", adapter=run / "final", dtype="f16")
    with pytest.raises(EvalError, match=r"gone\.gguf, which no longer exists"):
        student_gguf(run)


def test_the_recorded_and_the_conventional_export_are_found(tmp_path):
    run = make_run(tmp_path / "run", exported=True)
    assert student_gguf(run) == run / "export" / "student.gguf"
    elsewhere = tmp_path / "out" / "student.gguf"
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(b"GGUF")
    assert run_of_adapter(run / "final") == run.resolve()
    assert run_of_adapter(tmp_path / "out" / "final") is None
    record_export(run, elsewhere, adapter=run / "final", dtype="f16")
    assert student_gguf(run) == elsewhere.resolve()
    with pytest.raises(EvalError, match="no GGUF file at"):
        student_gguf(run, tmp_path / "nothing.gguf")


def test_the_base_model_is_the_one_the_base_weights_came_from(tmp_path):
    base = tmp_path / "base-hf"
    base.mkdir()
    run = make_run(tmp_path / "run", base=base)
    with pytest.raises(EvalError, match="name it with --base-model"):
        base_model_of(run)
    record_base_source(base, model="qwen2.5-coder-0.5b", gguf=tmp_path / "q.gguf")
    assert base_model_of(run) == "qwen2.5-coder-0.5b"
    (tmp_path / "own.gguf").write_bytes(b"GGUF")
    record_base_source(base, model=None, gguf=tmp_path / "own.gguf")
    assert base_model_of(run) == str((tmp_path / "own.gguf").resolve())


def test_an_unknown_dataset_is_refused_with_the_known_ones(tmp_path):
    run = make_run(tmp_path / "run", exported=True)
    with pytest.raises(EvalError, match=r"unknown dataset.*'nosuch'.*geoquery, spider_dev"):
        evaluate(run, Sample(dataset="nosuch"), base_model="qwen2.5-coder-0.5b")


def test_the_cli_prints_the_error_and_exits_2(tmp_path, capsys):
    run = make_run(tmp_path / "run")
    argv = ["--data-dir", str(tmp_path), "distill", "eval", str(run), "--dataset", "geoquery"]
    assert cli_main(argv) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "almanac distill export" in err


def geo_run(folder: Path, **changes: object) -> Path:
    """A bench output folder whose manifest is a GeoQuery test run of 2 questions."""
    folder.mkdir(parents=True)
    manifest = {
        "dataset": "geoquery",
        "system": "almanac",
        "split": "test",
        "limit": 2,
        "stream": None,
        "learn_split": None,
        "stratify": None,
        "model": "qwen2.5-coder-0.5b",
        "questions": 2,
        "small_model": None,
        "small_temperature": None,
        "small_max_tokens": None,
        "sliced_schema": False,
        **changes,
    }
    (folder / "run.json").write_text(json.dumps(manifest))
    return folder


def test_a_base_run_of_other_questions_or_another_model_is_refused(tmp_path):
    run = make_run(tmp_path / "run", exported=True)
    sample = Sample(dataset="geoquery", split="test", limit=2)
    other = geo_run(tmp_path / "other", limit=5)
    with pytest.raises(EvalError, match=r"not over the same questions .*: its limit is 5"):
        evaluate(run, sample, base_out=other)
    chain = geo_run(tmp_path / "chain", data_dictionary=True)
    with pytest.raises(EvalError, match=r"options this evaluation does not: \['data_dictionary'\]"):
        evaluate(run, sample, base_out=chain)
    model = geo_run(tmp_path / "model")
    expected = r"is of model 'qwen2\.5-coder-0\.5b', not 'qwen2\.5-coder-1\.5b'"
    with pytest.raises(EvalError, match=expected):
        evaluate(run, sample, base_out=model, base_model="qwen2.5-coder-1.5b")


def test_both_runs_get_the_same_sampling_options():
    sample = Sample("spider_dev", split="dev", limit=40, stratify=20, learn_split="train")
    argv = bench_argv(sample, BenchOptions(threads=2, timeout_s=30), "m.gguf", Path("o"))
    assert argv == [
        "run",
        "--dataset",
        "spider_dev",
        "--system",
        "almanac",
        "--model",
        "m.gguf",
        "--out",
        "o",
        "--split",
        "dev",
        "--limit",
        "40",
        "--stratify",
        "20",
        "--learn-split",
        "train",
        "--threads",
        "2",
        "--timeout",
        "30",
    ]
    assert sample.label == "spider_dev-dev-limit40-stratify20-learn-train"


def test_the_job_refuses_bad_names_and_paths(tmp_path):
    with pytest.raises(ValidationError, match="is not a folder name"):
        DistillEvalParams(run="../x", dataset="geoquery")
    with pytest.raises(ValidationError, match="stratif"):
        DistillEvalParams(run="r", dataset="geoquery", stratify=0)
    state = SimpleNamespace(settings=load_settings(data_dir=tmp_path))
    make_run(tmp_path / "distill" / "runs" / "r", exported=True)
    outside = DistillEvalParams(run="r", dataset="../../etc/passwd")
    with pytest.raises(ValueError, match="outside the import folder"):
        run_distill_eval(state, Context(), outside)
    with pytest.raises(FileNotFoundError, match="neither geoquery, spider_dev nor in the import"):
        run_distill_eval(state, Context(), DistillEvalParams(run="r", dataset="nosuch"))
    unknown = DistillEvalParams(run="r", dataset="geoquery", base_model="gpt-9")
    with pytest.raises(ModelError, match="unknown model 'gpt-9'"):
        run_distill_eval(state, Context(), unknown)


def test_eval_job_params_that_would_be_options_or_paths_are_refused():
    import pytest
    from pydantic import ValidationError

    from server.job_distill import DistillEvalParams

    ok = DistillEvalParams(run="r1", dataset="spider_dev", split="test", system="almanac")
    assert ok.split == "test"
    for bad in (
        {"split": "-x"},
        {"learn_split": "--fresh"},
        {"system": "../x"},
        {"system": "nope"},
    ):
        with pytest.raises(ValidationError):
            DistillEvalParams(run="r1", dataset="spider_dev", **bad)
