"""What the trainer learns from: the target only; and full fine-tuning as an option."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from transformers import AutoTokenizer

from distill.config import TrainConfig
from distill.progress import ProgressCallback
from distill.train import _trainer, adapted_layers, pairs, train
from tests.distill.tiny import MESSAGES, TARGET, TEXTS, tiny_base_and_data, tiny_student


def test_the_loss_counts_the_target_tokens_only(tmp_path: Path):
    base = tiny_student(tmp_path / "base", TEXTS, 300)
    tokenizer = AutoTokenizer.from_pretrained(str(base))
    config = TrainConfig(base_model=base, data=tmp_path, output_dir=tmp_path / "run", max_steps=1)
    rows = pairs([{"messages": MESSAGES, "target": TARGET}])
    trainer = _trainer(config, "cpu", tokenizer, rows, [], ProgressCallback(tmp_path / "m"))
    batch = trainer.data_collator([trainer.train_dataset[0]])
    ids, labels = batch["input_ids"][0].tolist(), batch["labels"][0].tolist()
    learned = tokenizer.decode([i for i, label in zip(ids, labels, strict=True) if label != -100])
    assert learned.startswith(TARGET) and learned.strip() == TARGET + "<|im_end|>"
    assert "How many singers?" in tokenizer.decode(ids)  # the prompt is there, unlearned


def test_full_fine_tuning_saves_a_whole_model(tmp_path: Path):
    base, data = tiny_base_and_data(tmp_path)
    config = TrainConfig(
        base_model=base, data=data, output_dir=tmp_path / "run", full_finetune=True, max_steps=2
    )
    result = train(config)
    assert result.steps == 2 and result.eval_loss is None
    final = tmp_path / "run" / "final"
    assert (final / "model.safetensors").is_file() and not (final / "adapter_config.json").exists()


def test_gradient_checkpointing_is_on_unless_the_config_turns_it_off(tmp_path: Path):
    base = tiny_student(tmp_path / "base", TEXTS, 300)
    tokenizer = AutoTokenizer.from_pretrained(str(base))
    rows = pairs([{"messages": MESSAGES, "target": TARGET}])
    for setting in (True, False):
        config = TrainConfig(
            base_model=base,
            data=tmp_path,
            output_dir=tmp_path / "run",
            max_steps=1,
            gradient_checkpointing=setting,
        )
        with warnings.catch_warnings():
            # not the deprecated trainer argument (others' deprecations are not ours to fix)
            warnings.filterwarnings("error", "`gradient_checkpointing` is deprecated")
            trainer = _trainer(config, "cpu", tokenizer, rows, [], ProgressCallback(tmp_path / "m"))
        assert trainer.args.gradient_checkpointing is setting
        assert getattr(trainer.args, "activation_checkpointing", setting) is setting
    assert TrainConfig(base_model=base, data=tmp_path, output_dir=tmp_path).gradient_checkpointing


def test_top_layers_puts_the_adapter_on_the_last_layers_only(tmp_path: Path):
    base, data = tiny_base_and_data(tmp_path)
    config = TrainConfig(
        base_model=base,
        data=data,
        output_dir=tmp_path / "run",
        max_steps=2,
        gradient_checkpointing=False,
        lora={"rank": 4, "alpha": 8, "top_layers": 1},
    )
    assert adapted_layers(config) == [1]  # the tiny model has layers 0 and 1
    tokenizer = AutoTokenizer.from_pretrained(str(base))
    rows = pairs([{"messages": MESSAGES, "target": TARGET}])
    trainer = _trainer(
        config, "cpu", tokenizer, rows, [], ProgressCallback(tmp_path / "m"), layers=[1]
    )
    trained = [name for name, p in trainer.model.named_parameters() if p.requires_grad]
    assert trained and all(".layers.1." in name and "lora_" in name for name in trained)
    result = train(config)
    assert result.steps == 2 and len(result.losses) == 2
    adapter = json.loads((tmp_path / "run" / "final" / "adapter_config.json").read_text())
    assert adapter["layers_to_transform"] == [1]
    everything = config.model_copy(
        update={"lora": config.lora.model_copy(update={"top_layers": None})}
    )
    assert adapted_layers(everything) is None


def test_a_cpu_with_bf16_matrix_products_gets_a_hint_when_the_run_is_fp32(tmp_path: Path):
    from distill.train import precision_hint

    zen4 = "processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_bf16 avx512_vnni\nbugs\t\t: none\n"
    older = "flags\t\t: fpu avx2 avx512f\nbugs\t\t: avx512_bf16_is_not_a_flag_here\n"
    fp32 = TrainConfig(base_model=tmp_path, data=tmp_path, output_dir=tmp_path)
    bf16 = fp32.model_copy(update={"precision": "bf16"})
    hint = precision_hint(fp32, "cpu", zen4)
    assert hint and "avx512_bf16" in hint and "precision: bf16" in hint
    assert precision_hint(fp32, "cpu", older) is None  # only the flags line counts
    assert precision_hint(bf16, "cpu", zen4) is None  # already bf16
    assert precision_hint(fp32, "cuda", zen4) is None  # auto is bf16 on a GPU
    assert precision_hint(fp32, "cpu", "") is None  # no /proc/cpuinfo (not Linux)
