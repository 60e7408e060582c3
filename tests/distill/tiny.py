"""A tiny randomly initialised Qwen2-architecture student, tokenizer included, for tests.

The tokenizer is a byte-level BPE trained here on the texts given (Qwen2's pre-tokenizer
split, its special tokens and ChatML template), so the whole loop runs in seconds; the
model has hidden size 64 and 2 layers.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MESSAGES = [
    {"role": "system", "content": "Write SQL."},
    {"role": "user", "content": "How many singers?"},
]
TARGET = "```sql\nSELECT count(*) FROM singer\n```"
TEXTS = [TARGET, "How many singers? Write SQL."] * 20  # what the tiny tokenizer learns from


def tiny_base_and_data(root: Path, copies: int = 2) -> tuple[Path, Path]:
    """A tiny student in ``root/base`` and a dataset in ``root/data`` of the one tuple
    (MESSAGES -> TARGET) ``copies`` times."""
    base = tiny_student(root / "base", TEXTS, 300)
    data = root / "data"
    data.mkdir()
    line = json.dumps({"messages": MESSAGES, "target": TARGET})
    (data / "train.jsonl").write_text("\n".join([line] * copies) + "\n")
    return base, data


def tiny_student(folder: Path, texts: Iterable[str], vocab_size: int = 1024) -> Path:
    """Save a tiny Qwen2 model and its tokenizer into ``folder``; return it."""
    import torch
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator(list(texts), trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        chat_template=CHATML,
    )
    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    Qwen2ForCausalLM(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


def tiny_run_config(
    root: Path, store: Any, databases: dict[str, Any], retriever: Any, **train: Any
):
    """A dataset built from ``store`` into ``root/data`` (a fifth for validation), the tiny
    student trained on its texts into ``root/base``, and the :class:`TrainConfig` of a run in
    ``root/run`` with ``train``'s settings."""
    from distill.config import TrainConfig
    from distill.dataset import DatasetOptions, build_dataset
    from distill.split import SplitRule

    options = DatasetOptions(split=SplitRule(validation_share=0.2))
    build_dataset(store, databases, retriever, root / "data", options)
    rows = [json.loads(x) for x in (root / "data" / "train.jsonl").read_text().splitlines()]
    texts = [m["content"] for r in rows for m in r["messages"]] + [r["target"] for r in rows]
    base = tiny_student(root / "base", texts)
    return TrainConfig(base_model=base, data=root / "data", output_dir=root / "run", **train)
