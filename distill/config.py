"""The training config: one YAML or TOML file, checked before anything is loaded.

Every key is known (``extra="forbid"``): a typo (``learning_rat``) is an error that names the
key and the file, before the model or the data are read. Example (YAML)::

    base_model: runs/base/qwen2.5-coder-0.5b-hf   # a Hugging Face model folder
    data: runs/data/spider                         # train.jsonl, validation.jsonl, manifest
    output_dir: runs/student-0.5b
    lora: {rank: 16, alpha: 32, dropout: 0.05}
    learning_rate: 2.0e-4
    epochs: 1
    max_seq_len: 2048
    batch_size: 1
    grad_accumulation: 8
    precision: auto      # bf16 on a GPU, fp32 on a CPU
    device: auto         # cuda when present, else cpu; "cuda" refuses to run without one

``full_finetune: true`` trains every weight instead of a LoRA adapter (``lora`` is then
ignored). ``max_steps`` (> 0) caps the run whatever ``epochs`` says. ``gradient_checkpointing``
(on by default, as trl's) recomputes the forward pass in the backward one to save activation
memory; ``false`` saves that recomputation (about a quarter of a LoRA step's compute) where
memory is plentiful, e.g. a CPU run with tens of GB of RAM. ``lora.top_layers: N`` puts the
adapter on the last N transformer layers only: with checkpointing off, the layers below them
need no backward pass and keep no activations for one, so a step costs less time and memory
(at most the model's number of layers; checked against the base model's ``config.json``).
``trim_heap`` (on by default) returns glibc's free heap pages to the system after every step
of a CPU run, which keeps its resident memory from growing (:mod:`distill.heap`).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError


class ConfigError(ValueError):
    """A config file that cannot be read or does not validate (names the file)."""


class LoraSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rank: int = Field(16, gt=0)
    alpha: int = Field(32, gt=0)
    dropout: float = Field(0.05, ge=0.0, lt=1.0)
    top_layers: int | None = Field(None, gt=0)
    target_modules: list[str] = Field(
        default_factory=lambda: [
            "q_proj",
            "k_proj",
            "v_proj",
            "o_proj",
            "gate_proj",
            "up_proj",
            "down_proj",
        ]
    )


class TrainConfig(BaseModel):
    """What a training run needs (module docstring)."""

    model_config = ConfigDict(extra="forbid")

    base_model: Path
    data: Path
    output_dir: Path
    lora: LoraSettings = Field(default_factory=LoraSettings)
    full_finetune: bool = False
    learning_rate: float = Field(2e-4, gt=0)
    epochs: float = Field(1.0, gt=0)
    max_steps: int = -1
    max_seq_len: int = Field(2048, gt=16)
    batch_size: int = Field(1, gt=0)
    grad_accumulation: int = Field(1, gt=0)
    precision: Literal["auto", "bf16", "fp32"] = "auto"
    device: Literal["auto", "cpu", "cuda"] = "auto"
    save_steps: int = Field(50, gt=0)
    save_total_limit: int = Field(2, gt=0)
    logging_steps: int = Field(1, gt=0)
    seed: int = 0
    gradient_checkpointing: bool = True
    trim_heap: bool = True

    def resolved_device(self, cuda_available: bool) -> str:
        if self.device == "auto":
            return "cuda" if cuda_available else "cpu"
        return self.device

    def bf16(self, device: str) -> bool:
        """bf16 on a GPU (auto), fp32 on a CPU."""
        return self.precision == "bf16" or (self.precision == "auto" and device == "cuda")


def load_config(path: Path, **overrides: Any) -> TrainConfig:
    """The config in ``path`` (.yaml, .yml or .toml), with ``overrides`` on top; relative
    paths are read from the file's folder."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror}") from None
    try:
        if path.suffix == ".toml":
            raw = tomllib.loads(text)
        elif path.suffix in (".yaml", ".yml"):
            raw = yaml.safe_load(text) or {}
        else:
            raise ConfigError(f"config {path}: use a .yaml, .yml or .toml file")
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"config {path} does not parse: {exc}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"config {path} must be a mapping of keys to values")
    raw = {**raw, **{k: v for k, v in overrides.items() if v is not None}}
    for key in ("base_model", "data", "output_dir"):
        if isinstance(raw.get(key), str) and not Path(raw[key]).is_absolute():
            raw[key] = str(path.parent / raw[key])
    try:
        return TrainConfig.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(f"config {path}: {problems}") from None
