"""The ``distill-data``, ``distill-train`` and ``distill-eval`` job kinds (permission
``distill``: the ML role).

``distill-data`` (:class:`DistillDataParams`) builds NL-CoT-SQL tuples from the verified
experiences of the target database (:func:`distill.dataset.build_dataset`, with the server's
own retriever and pipeline options, so the prompts are the ones ``ask`` sends) into
``<data_dir>/distill/data/<name>/`` (``train.jsonl``, ``validation.jsonl``,
``manifest.json``); the result is the manifest. Progress: experiences done; a cancelled job
stops at the next one, writing nothing (an earlier dataset of that name stays as it was).

``distill-train`` (:class:`DistillTrainParams`) trains a student as a config file in the
import folder says (:mod:`distill.config`), on a dataset built by ``distill-data``
(``dataset``) or the config's own ``data``, into ``<data_dir>/distill/runs/<run>/``,
resuming from the run's last checkpoint. A job that asks for ``device: cuda`` on a machine
without a GPU is refused when submitted; a config that asks for it is refused when the job
starts, before anything loads. Progress: one report per logged step (loss, ETA); a cancelled
job stops at the next step, its checkpoints kept for the next run to resume from.

``distill-eval`` (:class:`DistillEvalParams`) benches a run's exported student against its
base model on the same questions (:func:`bench.distill_eval.evaluate`): ``dataset`` is a
known bench dataset or a file or folder in the import folder, ``base_model`` a packaged name
or a GGUF in the import folder (default: the one the run's base weights came from). Output
goes to ``<data_dir>/distill/runs/<run>/eval/<sample>/``; the base model's bench run goes to
``<data_dir>/distill/bench/<sample>-<system>-<model>/``, shared by every run's evaluation
over the same sample, so the base answers each question once. Progress: questions answered
per model; a cancelled job stops before its next bench run (a bench run under way finishes
its question and is kept: the next evaluation resumes it). The result is ``eval.json``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from server.worker import JobContext

if TYPE_CHECKING:
    from server.state import AppState

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def _name(value: str | None) -> str | None:
    if value is not None and not NAME.match(value):
        raise ValueError(f"{value!r} is not a folder name (letters, digits, '.', '_', '-')")
    return value


def distill_dir(state: AppState) -> Path:
    return state.settings.data_dir / "distill"


class DistillDataParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="dataset folder name under <data_dir>/distill/data")
    database_name: str | None = Field(
        default=None, description="[DATABASE:...] name; default the configured target name"
    )
    validation_share: float = Field(default=0.1, ge=0.0, lt=1.0)
    min_score: float | None = Field(default=None, description="curation threshold")

    _check_name = field_validator("name")(_name)


class DistillTrainParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    config: str = Field(description="training config file (YAML/TOML) in the import folder")
    dataset: str | None = Field(default=None, description="a distill-data dataset name")
    run: str | None = Field(default=None, description="run folder name; default the config's")
    resume: bool = True
    device: Literal["auto", "cpu", "cuda"] | None = None

    _check_names = field_validator("dataset", "run")(_name)

    @model_validator(mode="after")
    def _device_present(self) -> DistillTrainParams:
        if self.device == "cuda":
            import torch

            if not torch.cuda.is_available():
                raise ValueError("device 'cuda' asked for, but this server has no CUDA GPU")
        return self


class DistillEvalParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run: str = Field(description="training run folder name under <data_dir>/distill/runs")
    dataset: str = Field(
        description="spider_dev, geoquery, or a dataset file or folder in the import folder"
    )
    split: str | None = None
    limit: int | None = Field(default=None, ge=1)
    stratify: int | None = Field(default=None, ge=1)
    learn_split: str | None = None
    drop_failing_gold: bool = False
    system: str = Field(default="almanac", description="bench system: the chain")
    base_model: str | None = Field(
        default=None,
        description="packaged model name or a GGUF in the import folder; default the run's",
    )
    threads: int | None = Field(default=None, ge=1)

    _check_run = field_validator("run", "split", "learn_split")(_name)

    @field_validator("system")
    @classmethod
    def _known_system(cls, value: str) -> str:
        from bench.systems import system_names

        if value not in system_names():
            raise ValueError(f"unknown bench system {value!r}; known: {system_names()}")
        return value


def needs_target(state: AppState) -> str | None:
    return None if state.target is not None else "no target database is configured"


def run_distill_data(
    state: AppState, context: JobContext, params: DistillDataParams
) -> dict[str, Any]:
    from dataclasses import replace

    from distill.dataset import DatasetOptions, build_dataset
    from distill.split import SplitRule

    name = params.database_name or state.settings.resolved_target_name or "target"
    if state.target is None:
        raise ValueError("no target database is configured")
    if params.database_name not in (None, state.settings.resolved_target_name):
        raise ValueError(
            f"distill-data: database {params.database_name!r} is not this server's target "
            f"({state.settings.resolved_target_name!r}); its tuples are checked on the target"
        )
    options = DatasetOptions(
        databases=[name],
        split=SplitRule(validation_share=params.validation_share),
        pipeline=state.asks.options,
    )
    if params.min_score is not None:
        options.curation = replace(options.curation, min_score=params.min_score)
    out = distill_dir(state) / "data" / params.name
    context.progress(0.05, f"building tuples of {name} into {out}")

    def progress(done: int, total: int) -> None:  # checks the cancellation too
        context.progress(0.05 + 0.9 * done / max(1, total), f"{done}/{total} experiences")

    manifest = build_dataset(
        state.store,
        {name: state.target},
        lambda: state.indices.retriever(),
        out,
        options,
        progress=progress,
    )
    kept = sum(manifest["counts"]["kept"].values())
    context.log(f"{kept} tuples kept ({manifest['kept_share']:.0%}) in {out}")
    return {"folder": str(out), **manifest}


def run_distill_train(
    state: AppState, context: JobContext, params: DistillTrainParams
) -> dict[str, Any]:
    from distill.config import load_config
    from distill.train import device_for, train
    from server.job_kinds import import_path

    path = import_path(state.settings.resolved_import_dir, params.config)
    root = distill_dir(state)
    overrides: dict[str, Any] = {
        "output_dir": str(root / "runs" / (params.run or path.stem)),
        "device": params.device,
    }
    if params.dataset is not None:
        overrides["data"] = str(root / "data" / params.dataset)
    config = load_config(path, **overrides)
    device = device_for(config)  # refuses a missing GPU before anything loads
    context.progress(0.01, f"training on {device} into {config.output_dir}")

    def on_step(row: dict[str, Any]) -> None:
        eta = "?" if row["eta_s"] is None else f"{row['eta_s']:.0f}s"
        fraction = row["step"] / max(1, row["max_steps"])
        context.progress(
            min(0.99, fraction), f"step {row['step']} loss {row['loss']:.4f} eta {eta}"
        )

    result = train(config, resume=params.resume, on_step=on_step)
    return result.summary()


def run_distill_eval(
    state: AppState, context: JobContext, params: DistillEvalParams
) -> dict[str, Any]:
    from bench.distill_eval import BenchOptions, evaluate
    from distill.eval_inputs import Sample, base_model_of

    root = distill_dir(state)
    run_dir = root / "runs" / params.run
    sample = Sample(
        dataset=_dataset(state, params.dataset),
        split=params.split,
        limit=params.limit,
        stratify=params.stratify,
        learn_split=params.learn_split,
        drop_failing_gold=params.drop_failing_gold,
    )
    base_model = _base_model(state, params.base_model) or base_model_of(run_dir)
    model_label = Path(base_model).stem if base_model.endswith(".gguf") else base_model
    base_out = root / "bench" / f"{sample.label}-{params.system}-{model_label}"
    phases = {"base": 0.02, "student": 0.5}

    def on_progress(phase: str, done: int, total: int) -> None:
        fraction = phases[phase] + 0.48 * done / max(1, total)
        context.progress(fraction, f"{phase}: {done}/{total} questions answered")

    result = evaluate(
        run_dir,
        sample,
        bench=BenchOptions(system=params.system, threads=params.threads),
        base_out=base_out,
        base_model=base_model,
        on_progress=on_progress,
        between=context.check,
    )
    delta = ", ".join(f"{k} {100 * v:+.1f}" for k, v in result.delta.items())
    context.log(f"student against {base_model} on {len(result.ids)} questions: {delta} points")
    return result.to_dict()


def _dataset(state: AppState, name: str) -> str:
    """A known bench dataset name as it is, else a file or folder in the import folder."""
    from bench.datasets.registry import KNOWN_DATASETS

    if name in KNOWN_DATASETS:
        return name
    root = state.settings.resolved_import_dir.resolve()
    path = (root / name).resolve()
    if not path.is_relative_to(root) or path == root:
        raise ValueError(f"dataset path {name!r} is outside the import folder")
    if not path.exists():
        known = ", ".join(sorted(KNOWN_DATASETS))
        raise FileNotFoundError(f"dataset {name!r} is neither {known} nor in the import folder")
    return str(path)


def _base_model(state: AppState, name: str | None) -> str | None:
    """A packaged model name as it is, else a GGUF file in the import folder."""
    if name is None or not name.endswith(".gguf"):
        if name is not None:
            from agents.llm.models import get_model

            get_model(name)  # ModelError naming the packaged ones
        return name
    from server.job_kinds import import_path

    return str(import_path(state.settings.resolved_import_dir, name))
