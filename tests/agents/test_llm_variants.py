"""Variants of one prompt: decoded together when the model can, one by one otherwise."""

from __future__ import annotations

import numpy as np
import pytest

from agents.llm.base import LLMBusyError, LLMError, ResilientLLM
from agents.llm.cache import CachedLLM
from agents.llm.parallel_decode import TOP_K, sample_token
from agents.llm.variants import Variant, chat_variants, together_capacity, variants_of
from agents.sql.generate import SqlGenerator
from tests.agents.scripted import ScriptedLLM, ScriptedTogetherLLM, sql_reply

MESSAGES = [{"role": "user", "content": "how many?"}]
VARIANTS = [Variant(0.0, 0, "```sql\n", ("```",)), Variant(0.7, 1), Variant(0.7, 2)]


def echo_seed(messages, options):
    return f"seed {options['seed']} prefix {options.get('reply_prefix')!r}"


def test_a_model_without_the_ability_is_asked_once_per_variant():
    llm = ScriptedLLM([echo_seed])
    replies = chat_variants(llm, MESSAGES, VARIANTS, max_tokens=64)
    assert [r.text for r in replies] == [
        "seed 0 prefix '```sql\\n'",
        "seed 1 prefix None",
        "seed 2 prefix None",
    ]
    assert llm.calls[0][1] == {
        "max_tokens": 64,
        "timeout": None,
        "temperature": 0.0,
        "seed": 0,
        "reply_prefix": "```sql\n",
        "stop": ["```"],
    }
    assert "reply_prefix" not in llm.calls[1][1] and "stop" not in llm.calls[1][1]
    assert together_capacity(llm) == 1


def test_one_failed_variant_keeps_the_others_and_busy_propagates():
    replies = chat_variants(ScriptedLLM(["a", LLMError("boom"), "c"]), MESSAGES, VARIANTS)
    assert replies[0].text == "a" and isinstance(replies[1], LLMError) and replies[2].text == "c"
    with pytest.raises(LLMBusyError):
        chat_variants(ScriptedLLM([LLMBusyError("full")]), MESSAGES, VARIANTS)


def test_a_model_that_decodes_together_gets_one_call_through_its_wrappers(tmp_path):
    inner = ScriptedTogetherLLM([echo_seed], sequences=4)
    llm = CachedLLM(ResilientLLM(inner, retries=0), tmp_path / "cache.sqlite")
    assert together_capacity(llm) == 4
    first = chat_variants(llm, MESSAGES, VARIANTS, max_tokens=64)
    assert len(inner.batches) == 1 and len(inner.batches[0]) == 3
    assert [r.text for r in first] == [
        f"seed {i} prefix {p!r}" for i, p in ((0, "```sql\n"), (1, None), (2, None))
    ]
    again = chat_variants(llm, MESSAGES, VARIANTS, max_tokens=64)  # all from the cache
    assert [r.text for r in again] == [r.text for r in first] and len(inner.batches) == 1
    assert llm.hits == 3 and llm.misses == 3
    # the cache keys are those of the equivalent chat calls
    single = llm.chat(MESSAGES, max_tokens=64, **VARIANTS[1].chat_options())
    assert single.text == "seed 1 prefix None" and llm.hits == 4


def test_a_failure_of_a_joint_decode_fails_every_variant():
    llm = ScriptedTogetherLLM([LLMError("context full")])
    replies = chat_variants(llm, MESSAGES, VARIANTS)
    assert all(isinstance(r, LLMError) for r in replies) and len(replies) == 3
    with pytest.raises(LLMError):
        variants_of(llm, MESSAGES, VARIANTS)


def test_the_generator_draws_greedy_and_samples_in_one_call():
    llm = ScriptedTogetherLLM([lambda m, o: sql_reply(f"SELECT {o['seed']}")])
    candidates = SqlGenerator(llm, "sqlite").draw(MESSAGES, [0, 1, 2])
    assert [c.sql.splitlines()[-1] for c in candidates] == ["SELECT 0", "SELECT 1", "SELECT 2"]
    assert [c.sample for c in candidates] == [0, 1, 2]
    [batch] = llm.batches
    assert batch[0].reply_prefix == "```sql\n" and batch[0].temperature == 0.0
    assert batch[1].reply_prefix is None and batch[1].temperature == 0.7


def test_sampling_keeps_to_the_top_tokens_and_repeats_with_its_seed():
    logits = np.zeros(1000, dtype=np.float32)
    logits[:3] = [9.0, 8.5, 8.0]  # three likely tokens; the rest far below min-p
    assert sample_token(logits, 0.0, np.random.default_rng(0)) == 0
    drawn = [sample_token(logits, 1.0, np.random.default_rng(seed)) for seed in range(200)]
    assert set(drawn) == {0, 1, 2}
    again = [sample_token(logits, 1.0, np.random.default_rng(seed)) for seed in range(200)]
    assert drawn == again
    flat = np.zeros(1000, dtype=np.float32)  # everything equally likely: top-k bounds it
    assert len({sample_token(flat, 1.0, np.random.default_rng(s)) for s in range(500)}) <= TOP_K
