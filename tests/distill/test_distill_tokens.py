"""The arithmetic of ``python -m bench.distill_tokens``: length statistics, padding, and the
FLOPs and H100 time of an epoch (the formula of :func:`bench.distill_tokens.plan`)."""

from __future__ import annotations

import argparse
import json

import pytest

from bench.distill_tokens import (
    H100_BF16_DENSE_FLOPS,
    Lengths,
    build,
    build_inputs,
    padded_tokens,
    plan,
    report,
    stats,
    tuple_lengths,
)


def test_stats_use_nearest_rank_percentiles():
    row = stats(list(range(1, 11)))
    assert row == {"count": 10, "mean": 5.5, "p50": 5, "p90": 9, "p95": 10, "max": 10, "sum": 55}
    assert stats([]) == {"count": 0}


def test_padding_fills_each_batch_to_its_longest():
    assert padded_tokens([5, 5, 5], 1) == 15  # batch size 1: nothing padded
    assert padded_tokens([1, 9], 2) == 18
    lengths = [10, 100, 20, 200, 30]
    assert sum(lengths) < padded_tokens(lengths, 2) <= 200 * 5


def test_plan_counts_six_or_eight_n_per_token_plus_attention():
    rows = {(r["student"], r["method"], r["mfu"]): r for r in plan(1_000_000, 500, 1000, [0.5])}
    lora = rows[("qwen2.5-coder-1.5b", "lora", 0.5)]
    attention = 16 * 28 * 1536 * 1000
    assert lora["flops_per_token"] == pytest.approx(6 * 1.54e9 + attention)
    assert lora["h100_seconds"] == pytest.approx(
        1e6 * (6 * 1.54e9 + attention) / (0.5 * H100_BF16_DENSE_FLOPS), abs=0.1
    )
    assert lora["h100_seconds_per_1k_tuples"] == pytest.approx(2 * lora["h100_seconds"], abs=0.2)
    full = rows[("qwen2.5-coder-7b", "full", 0.5)]
    assert full["flops_per_token"] == pytest.approx(8 * 7.61e9 + 16 * 28 * 3584 * 1000)


class CharTokenizer:
    """One token per character of each message, plus two per message (a stand-in template)."""

    def apply_chat_template(self, conversation, tokenize=True, add_generation_prompt=False):
        ids = [0] * sum(len(m["content"]) + 2 for m in conversation)
        return ids + [0, 0] * add_generation_prompt


def test_tuple_lengths_split_prompt_and_target():
    rows = [{"messages": [{"role": "user", "content": "abcd"}], "target": "```sql\nx\n```"}]
    lengths = tuple_lengths(rows, CharTokenizer())
    assert lengths.prompt == [8] and lengths.total == [6 + 12 + 2]
    assert lengths.target == [12]


def options(out, **given) -> argparse.Namespace:
    values = {"dataset": "spider_dev", "out": out, "split": None, "limit": None}
    values |= {"embedder": "minilm", "validation_share": 0.1, "reuse": True}
    values |= {"max_seq_len": 4096, "batch_size": 1, "mfu": [0.4]}
    return argparse.Namespace(**(values | given))


def test_an_epoch_is_the_train_tuples_alone(tmp_path):
    rows = [{"source": "human"}] * 3
    lengths = Lengths(prompt=[90, 180, 900], total=[100, 200, 1000])
    result = report(rows, lengths, options(tmp_path), trained=2)
    assert result["tuples"] == 3 and result["train_tuples"] == 2
    assert result["tokens"]["total"]["sum"] == 1300  # the lengths of every tuple
    assert result["epoch_tokens"] == 300 == result["epoch_tokens_padded"]  # validation's not
    lora = next(r for r in result["plan"] if r["method"] == "lora")
    assert lora["flops_per_token"] == pytest.approx(6 * 1.54e9 + 16 * 28 * 1536 * 150)
    assert result["split"] is None and result["dataset"] == "spider_dev"


def test_reuse_counts_only_a_dataset_built_from_the_same_inputs(tmp_path):
    (tmp_path / "dataset").mkdir()
    row = {"messages": [], "target": "x", "source": "human"}
    (tmp_path / "dataset" / "train.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(ValueError, match="built from unknown inputs"):
        build(options(tmp_path))  # no build.json: what it was built from is unknown
    built_from = build_inputs(options(tmp_path, split="train", limit=20))
    (tmp_path / "build.json").write_text(json.dumps(built_from))
    with pytest.raises(ValueError, match=r"'split': 'train', 'limit': 20"):
        build(options(tmp_path))  # another split and limit: tokens.json would misname it
    assert build(options(tmp_path, split="train", limit=20)) == {
        "train": [row],
        "validation": [],
    }
