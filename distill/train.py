"""Supervised fine-tuning of a student on a dataset of NL-CoT-SQL tuples (trl + peft).

``train(config)`` checks everything it can before loading a weight: the base model folder
(``config.json`` and a tokenizer), the device (``device: cuda`` without a GPU is refused),
the dataset (an empty one is refused; tuples longer than ``max_seq_len`` tokens, prompt and
target together, are dropped and counted), and the last checkpoint when resuming (a corrupt
one is refused, :mod:`distill.checkpoints`). Then trl's ``SFTTrainer`` trains on
prompt-completion pairs: the prompt is the chain's messages, the completion the target reply,
and the loss counts the completion's tokens only (``completion_only_loss``). With LoRA (the
default) only the adapter trains; ``full_finetune`` trains every weight.

The run directory (``output_dir``) holds ``config.json`` (the config as run), the dataset's
``manifest.json``, ``metrics.jsonl`` (one line per logged step: loss, learning rate, epoch,
elapsed seconds, ETA, resident MB; then the evaluation, then the peak resident memory and the
heap trims of a CPU run, :mod:`distill.heap`), the ``checkpoint-<step>/`` folders and, at the
end, ``final/`` (the adapter or the model, with the tokenizer). Several GPUs: the same
command under ``accelerate launch``.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from distill.checkpoints import check_checkpoint, last_checkpoint
from distill.config import ConfigError, TrainConfig
from distill.dataset_files import MANIFEST, TRAIN, VALIDATION, EmptyDatasetError, read_tuples
from distill.heap import HeapTrimCallback, heap_trim_callback
from distill.progress import ProgressCallback, StepHook

log = logging.getLogger(__name__)
METRICS = "metrics.jsonl"


class UnknownBaseModelError(ValueError):
    """The base model path is not a Hugging Face model folder."""


class DeviceMissingError(RuntimeError):
    """The configured device is not present on this machine."""


@dataclass
class TrainResult:
    run_dir: Path
    steps: int
    losses: list[float] = field(default_factory=list)
    eval_loss: float | None = None
    dropped_over_length: int = 0
    train_tuples: int = 0
    resumed_from: Path | None = None
    seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        """The run in JSON terms: what the CLI prints and the train job returns."""
        return {
            "run_dir": str(self.run_dir),
            "steps": self.steps,
            "first_loss": self.losses[0] if self.losses else None,
            "last_loss": self.losses[-1] if self.losses else None,
            "eval_loss": self.eval_loss,
            "train_tuples": self.train_tuples,
            "dropped_over_length": self.dropped_over_length,
            "resumed_from": str(self.resumed_from) if self.resumed_from else None,
            "seconds": round(self.seconds, 1),
        }


def check_base_model(path: Path) -> None:
    """Raise :class:`UnknownBaseModelError` unless ``path`` holds a model and a tokenizer."""
    if not (path / "config.json").is_file():
        raise UnknownBaseModelError(
            f"base model {path} is not a Hugging Face model folder (no config.json); "
            "see distill.base_weights for how to make one from the packaged GGUF"
        )
    if not any((path / name).is_file() for name in ("tokenizer.json", "tokenizer_config.json")):
        raise UnknownBaseModelError(f"base model {path} has no tokenizer (tokenizer.json)")


def adapted_layers(config: TrainConfig) -> list[int] | None:
    """The transformer layers the LoRA adapter goes on: the last ``lora.top_layers`` of the
    base model's, or None (all). :class:`ConfigError` when the model has fewer layers."""
    top = config.lora.top_layers
    if top is None or config.full_finetune:
        return None
    try:
        model = json.loads((config.base_model / "config.json").read_text())
        layers = int(model["num_hidden_layers"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UnknownBaseModelError(
            f"base model {config.base_model}: no num_hidden_layers in config.json ({exc})"
        ) from None
    if top > layers:
        raise ConfigError(
            f"lora.top_layers is {top} but base model {config.base_model} has {layers} layers"
        )
    return list(range(layers - top, layers))


def device_for(config: TrainConfig) -> str:
    """The device to train on; :class:`DeviceMissingError` when the configured one is absent."""
    import torch

    device = config.resolved_device(torch.cuda.is_available())
    if device == "cuda" and not torch.cuda.is_available():
        raise DeviceMissingError(
            "the config asks for device 'cuda' but this machine has no CUDA GPU; run it on a "
            "GPU node, or set device: cpu (small models only)"
        )
    return device


BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")  # /proc/cpuinfo flags of bf16 matrix products


def precision_hint(config: TrainConfig, device: str, cpuinfo: str) -> str | None:
    """A hint when a CPU run trains in fp32 on a CPU whose flags (``cpuinfo``, the text of
    /proc/cpuinfo) include bf16 matrix products: ``precision: bf16`` is faster there
    (docs/distillation.md); None otherwise."""
    if device != "cpu" or config.bf16(device):
        return None
    line = next((line for line in cpuinfo.splitlines() if line.startswith("flags")), "")
    flags = set(line.partition(":")[2].split())
    found = [flag for flag in BF16_CPU_FLAGS if flag in flags]
    if not found:
        return None
    return (
        f"this CPU has {', '.join(found)}: `precision: bf16` trains about 1.6x faster than "
        "fp32 here (docs/distillation.md); the config keeps fp32"
    )


def pairs(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tuples as trl's conversational prompt-completion records."""
    return [
        {
            "prompt": row["messages"],
            "completion": [{"role": "assistant", "content": row["target"]}],
        }
        for row in rows
    ]


def within_length(records: list[dict[str, Any]], tokenizer: Any, max_len: int) -> list[dict]:
    """The records whose prompt and completion together fit ``max_len`` tokens."""
    kept = []
    for record in records:
        ids = tokenizer.apply_chat_template(record["prompt"] + record["completion"], tokenize=True)
        ids = ids["input_ids"] if hasattr(ids, "keys") else ids
        if len(ids) <= max_len:
            kept.append(record)
    return kept


def load_records(config: TrainConfig, tokenizer: Any) -> tuple[list[dict], list[dict], int]:
    """(train, validation, dropped over length); :class:`EmptyDatasetError` when no train
    tuple is left."""
    path = config.data / TRAIN
    if not path.is_file():
        raise EmptyDatasetError(f"no {TRAIN} in {config.data}: build it with `distill data`")
    train = pairs(read_tuples(path))
    validation_path = config.data / VALIDATION
    validation = pairs(read_tuples(validation_path)) if validation_path.is_file() else []
    if not train:
        raise EmptyDatasetError(f"{path} holds no tuple")
    fitting = within_length(train, tokenizer, config.max_seq_len)
    dropped = len(train) - len(fitting)
    validation_fitting = within_length(validation, tokenizer, config.max_seq_len)
    dropped += len(validation) - len(validation_fitting)
    if not fitting:
        raise EmptyDatasetError(
            f"all {len(train)} training tuples of {path} are longer than max_seq_len "
            f"{config.max_seq_len} tokens"
        )
    if dropped:
        log.warning("dropped %d tuples longer than %d tokens", dropped, config.max_seq_len)
    return fitting, validation_fitting, dropped


def prepare_run_dir(config: TrainConfig) -> None:
    config.output_dir.mkdir(parents=True, exist_ok=True)
    (config.output_dir / "config.json").write_text(config.model_dump_json(indent=2) + "\n")
    manifest = config.data / MANIFEST
    if manifest.is_file():
        shutil.copyfile(manifest, config.output_dir / MANIFEST)


def train(
    config: TrainConfig, *, resume: bool = True, on_step: StepHook | None = None
) -> TrainResult:
    """Train as ``config`` says (module docstring); resume from the run's last checkpoint
    when there is one and ``resume``. ``on_step`` gets each logged step's metrics row."""
    from transformers import AutoTokenizer

    check_base_model(config.base_model)
    layers = adapted_layers(config)
    device = device_for(config)
    cpuinfo = Path("/proc/cpuinfo")
    hint = precision_hint(config, device, cpuinfo.read_text() if cpuinfo.is_file() else "")
    if hint:
        log.info(hint)
    resumed_from = last_checkpoint(config.output_dir) if resume else None
    if resumed_from is not None:
        check_checkpoint(resumed_from)
    tokenizer = AutoTokenizer.from_pretrained(str(config.base_model))
    train_rows, validation_rows, dropped = load_records(config, tokenizer)
    prepare_run_dir(config)
    started = time.perf_counter()
    callback = ProgressCallback(
        config.output_dir / METRICS, dropped_over_length=dropped, on_step=on_step
    )
    trainer = _trainer(
        config, device, tokenizer, train_rows, validation_rows, callback, layers=layers
    )
    trainer.train(resume_from_checkpoint=str(resumed_from) if resumed_from else None)
    result = TrainResult(
        config.output_dir,
        trainer.state.global_step,
        [e["loss"] for e in trainer.state.log_history if "loss" in e],
        dropped_over_length=dropped,
        train_tuples=len(train_rows),
        resumed_from=resumed_from,
    )
    if validation_rows:
        metrics = trainer.evaluate()
        result.eval_loss = metrics.get("eval_loss")
        _append(config.output_dir / METRICS, {"event": "eval", **metrics})
    trainer.save_model(str(config.output_dir / "final"))
    tokenizer.save_pretrained(str(config.output_dir / "final"))
    result.seconds = time.perf_counter() - started
    _append(config.output_dir / METRICS, _memory_row(trainer))
    return result


def _memory_row(trainer: Any) -> dict[str, Any]:
    """The run's peak resident memory and what trimming the heap cost (:mod:`distill.heap`)."""
    import resource

    row: dict[str, Any] = {
        "event": "memory",
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6, 1),
    }
    for callback in trainer.callback_handler.callbacks:
        if isinstance(callback, HeapTrimCallback):
            row |= {"heap_trims": callback.calls, "heap_trim_s": round(callback.seconds, 2)}
            log.info("heap trimmed %d times in %.1f s", callback.calls, callback.seconds)
    return row


def _trainer(
    config: TrainConfig,
    device: str,
    tokenizer: Any,
    train_rows: list[dict],
    validation_rows: list[dict],
    callback: ProgressCallback,
    *,
    layers: list[int] | None = None,
) -> Any:
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM
    from trl import SFTConfig, SFTTrainer

    dtype = torch.bfloat16 if config.bf16(device) else torch.float32
    model = AutoModelForCausalLM.from_pretrained(str(config.base_model), dtype=dtype)
    args = SFTConfig(
        output_dir=str(config.output_dir),
        num_train_epochs=config.epochs,
        max_steps=config.max_steps,
        per_device_train_batch_size=config.batch_size,
        per_device_eval_batch_size=config.batch_size,
        gradient_accumulation_steps=config.grad_accumulation,
        learning_rate=config.learning_rate,
        logging_steps=config.logging_steps,
        save_steps=config.save_steps,
        save_total_limit=config.save_total_limit,
        bf16=config.bf16(device),
        use_cpu=device == "cpu",
        max_length=config.max_seq_len,
        **_checkpointing_argument(SFTConfig, config.gradient_checkpointing),
        completion_only_loss=True,
        report_to=[],
        seed=config.seed,
        disable_tqdm=True,
    )
    callbacks: list[Any] = [callback]
    trim = heap_trim_callback(device, config.trim_heap)
    if trim is not None:
        callbacks.append(trim)
    peft_config = None
    if not config.full_finetune:
        peft_config = LoraConfig(
            r=config.lora.rank,
            lora_alpha=config.lora.alpha,
            lora_dropout=config.lora.dropout,
            target_modules=config.lora.target_modules,
            layers_to_transform=layers,
            layers_pattern="layers" if layers is not None else None,
            task_type="CAUSAL_LM",
        )
    return SFTTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(train_rows),
        eval_dataset=Dataset.from_list(validation_rows) if validation_rows else None,
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=callbacks,
    )


def _checkpointing_argument(args_class: type, enabled: bool) -> dict[str, Any]:
    """The trainer argument that turns activation (gradient) checkpointing on or off:
    ``activation_checkpointing`` where the installed transformers has it (5.x from when it
    was renamed; ``gradient_checkpointing`` is its deprecated alias, gone in v6), else the
    old name. The config keeps its ``gradient_checkpointing`` key either way."""
    import dataclasses

    names = {f.name for f in dataclasses.fields(args_class)}
    renamed = "activation_checkpointing" in names
    return {"activation_checkpointing" if renamed else "gradient_checkpointing": enabled}


def _append(path: Path, row: dict[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(row, default=str) + "\n")
