"""``almanac distill`` and the distill job kinds, on the concert_singer store."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from pydantic import ValidationError

from agents.pipeline_options import PipelineOptions
from server.cli_distill import add_distill_commands, run_distill_command
from server.job_distill import (
    DistillDataParams,
    DistillTrainParams,
    run_distill_data,
    run_distill_train,
)
from server.settings import load_settings
from tests.distill.conftest import DB, SPIDER
from tests.distill.tiny import tiny_student


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_distill_commands(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


class Context:
    """Records what a job reports."""

    def __init__(self) -> None:
        self.reports: list[tuple[float | None, str | None]] = []
        self.lines: list[str] = []

    def progress(self, fraction: float | None, message: str | None = None) -> None:
        self.reports.append((fraction, message))

    def log(self, line: str, level: str = "info") -> None:
        self.lines.append(line)


def test_distill_data_writes_the_dataset_and_prints_the_manifest(concert, tmp_path, capsys):
    url = f"sqlite:///{SPIDER / 'database' / DB / f'{DB}.sqlite'}"
    settings = load_settings(data_dir=tmp_path, store_url=str(concert.store.url), embedder="none")
    args = parse(["distill", "data", "--out", str(tmp_path / "d"), "--db", url, "--name", DB])
    assert run_distill_command(args, settings) == 0
    manifest = json.loads(capsys.readouterr().out)
    assert manifest["databases"] == [DB] and manifest["counts"]["kept"]["human"] == 24
    assert (tmp_path / "d" / "train.jsonl").is_file()


def test_distill_train_refuses_a_missing_gpu_with_a_clear_message(tmp_path, capsys):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    base = tiny_student(tmp_path / "base", ["SELECT 1"] * 10, 280)
    config = tmp_path / "run.yaml"
    config.write_text(f"base_model: {base}\ndata: {tmp_path}\noutput_dir: {tmp_path / 'r'}\n")
    assert (
        run_distill_command(parse(["distill", "train", str(config), "--device", "cuda"]), None) == 2
    )
    assert "no CUDA GPU" in capsys.readouterr().out


def test_job_params_refuse_a_missing_gpu_and_bad_names():
    if not torch.cuda.is_available():
        with pytest.raises(ValidationError, match="this server has no CUDA GPU"):
            DistillTrainParams(config="run.yaml", device="cuda")
    with pytest.raises(ValidationError, match="is not a folder name"):
        DistillTrainParams(config="run.yaml", run="../escape")
    with pytest.raises(ValidationError, match="validation_shar"):
        DistillDataParams(name="d", validation_shar=0.2)


def state_of(concert, tmp_path: Path) -> SimpleNamespace:
    settings = load_settings(data_dir=tmp_path, store_url=str(concert.store.url), target_name=DB)
    indices = SimpleNamespace(retriever=lambda: concert.retriever)
    return SimpleNamespace(
        settings=settings,
        store=concert.store,
        target=concert.database,
        indices=indices,
        asks=SimpleNamespace(options=PipelineOptions()),
    )


def test_the_distill_data_job_builds_into_the_data_folder(concert, tmp_path):
    context = Context()
    result = run_distill_data(state_of(concert, tmp_path), context, DistillDataParams(name="cs"))
    folder = tmp_path / "distill" / "data" / "cs"
    assert result["folder"] == str(folder) and (folder / "manifest.json").is_file()
    assert result["counts"]["kept"] == {"human": 24, "mined": 1, "synthetic": 1}
    assert "26 tuples kept (100%)" in context.lines[0]
    other = DistillDataParams(name="other", database_name="not_the_target")
    with pytest.raises(ValueError, match="not this server's target"):
        run_distill_data(state_of(concert, tmp_path), Context(), other)


def test_the_distill_train_job_refuses_a_config_asking_for_a_missing_gpu(concert, tmp_path):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    state = state_of(concert, tmp_path)
    imports = state.settings.resolved_import_dir
    imports.mkdir(parents=True)
    (imports / "gpu.yaml").write_text("base_model: /b\ndata: /d\noutput_dir: /o\ndevice: cuda\n")
    from distill.train import DeviceMissingError

    with pytest.raises(DeviceMissingError, match="no CUDA GPU"):
        run_distill_train(state, Context(), DistillTrainParams(config="gpu.yaml"))


def test_the_distill_train_job_trains_on_a_built_dataset_with_progress(concert, tmp_path):
    state = state_of(concert, tmp_path)
    run_distill_data(state, Context(), DistillDataParams(name="cs"))
    rows = (tmp_path / "distill" / "data" / "cs" / "train.jsonl").read_text().splitlines()
    texts = [m["content"] for r in map(json.loads, rows) for m in r["messages"]]
    base = tiny_student(tmp_path / "base", texts, 600)
    imports = state.settings.resolved_import_dir
    imports.mkdir(parents=True)
    (imports / "tiny.toml").write_text(
        f'base_model = "{base}"\ndata = "unused"\noutput_dir = "unused"\nmax_steps = 2\n'
        "batch_size = 2\n"
    )
    context = Context()
    params = DistillTrainParams(config="tiny.toml", dataset="cs")
    result = run_distill_train(state, context, params)
    assert result["steps"] == 2 and result["run_dir"] == str(tmp_path / "distill" / "runs" / "tiny")
    steps = [m for _, m in context.reports if m and m.startswith("step ")]
    assert len(steps) == 2 and "eta" in steps[-1]
