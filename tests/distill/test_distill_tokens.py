"""The arithmetic of ``python -m bench.distill_tokens``: length statistics, padding, and the
FLOPs and H100 time of an epoch (the formula of :func:`bench.distill_tokens.plan`)."""

from __future__ import annotations

import pytest

from bench.distill_tokens import H100_BF16_DENSE_FLOPS, padded_tokens, plan, stats, tuple_lengths


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
