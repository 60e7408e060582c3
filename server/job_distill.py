"""The ``distill-data`` and ``distill-train`` job kinds (permission ``distill``: the ML role).

``distill-data`` (:class:`DistillDataParams`) builds NL-CoT-SQL tuples from the verified
experiences of the target database (:func:`distill.dataset.build_dataset`, with the server's
own retriever and pipeline options, so the prompts are the ones ``ask`` sends) into
``<data_dir>/distill/data/<name>/`` (``train.jsonl``, ``validation.jsonl``,
``manifest.json``); the result is the manifest.

``distill-train`` (:class:`DistillTrainParams`) trains a student as a config file in the
import folder says (:mod:`distill.config`), on a dataset built by ``distill-data``
(``dataset``) or the config's own ``data``, into ``<data_dir>/distill/runs/<run>/``,
resuming from the run's last checkpoint. A job that asks for ``device: cuda`` on a machine
without a GPU is refused when submitted; a config that asks for it is refused when the job
starts, before anything loads. Progress: one report per logged step (loss, ETA); a cancelled
job stops at the next step, its checkpoints kept for the next run to resume from.
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
    options = DatasetOptions(
        databases=[name],
        split=SplitRule(validation_share=params.validation_share),
        pipeline=state.asks.options,
    )
    if params.min_score is not None:
        options.curation = replace(options.curation, min_score=params.min_score)
    out = distill_dir(state) / "data" / params.name
    context.progress(0.05, f"building tuples of {name} into {out}")
    manifest = build_dataset(
        state.store, {name: state.target}, lambda: state.indices.retriever(), out, options
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
    return {
        "run_dir": str(result.run_dir),
        "steps": result.steps,
        "first_loss": result.losses[0] if result.losses else None,
        "last_loss": result.losses[-1] if result.losses else None,
        "eval_loss": result.eval_loss,
        "train_tuples": result.train_tuples,
        "dropped_over_length": result.dropped_over_length,
        "resumed_from": str(result.resumed_from) if result.resumed_from else None,
        "seconds": round(result.seconds, 1),
    }
