"""Replies decoded together by the real embedded model (Qwen2.5-Coder 0.5B)."""

from __future__ import annotations

from pathlib import Path

import llama_cpp
import pytest

from agents.llm.base import LLMError, LLMTimeoutError
from agents.llm.llamacpp import LlamaCppLLM
from agents.llm.parallel_decode import SequenceRequest, decode_parallel
from agents.llm.prompt_cache import PromptStateCache, cache_folder
from agents.llm.variants import Variant, chat_variants

pytestmark = pytest.mark.slow  # loads the real model twice (~12 s on 2 cores)

SYSTEM = {"role": "system", "content": "You write SQLite SQL. Answer with SQL only."}
ASK = [SYSTEM, {"role": "user", "content": "Count the rows of table orders placed in 2024."}]
# Greedy replies decoded in batches of other shapes may part at a near tie (the float sums run in
# another order), so replies that must be equal come from a prompt with one clear answer.
COPY = [
    SYSTEM,
    {"role": "user", "content": "Repeat this query exactly: SELECT COUNT(*) FROM orders;"},
]
GREEDY = Variant(0.0, 0, "```sql\n", ("```",))


@pytest.fixture(scope="module")
def model_path(embedded_model_path: Path) -> str:
    return str(embedded_model_path)


@pytest.fixture(scope="module")
def llama(model_path: str) -> LlamaCppLLM:
    return LlamaCppLLM(model_path, n_ctx=2048, n_threads=2, seed=7, parallel_sequences=4)


def _only_the_prompt_is_left(llm: LlamaCppLLM, messages: list[dict[str, str]]) -> None:
    memory = llama_cpp.llama_get_memory(llm._llama._ctx.ctx)
    prompt = llm._templated(messages, None)[0]
    assert llm._llama.n_tokens == len(prompt)
    assert llama_cpp.llama_memory_seq_pos_max(memory, 0) == len(prompt) - 1
    for seq in range(1, 4):
        assert llama_cpp.llama_memory_seq_pos_max(memory, seq) == -1


def test_greedy_replies_together_equal_the_one_at_a_time_reply(llama):
    alone = llama.chat(COPY, max_tokens=48, temperature=0.0, reply_prefix="```sql\n", stop=["```"])
    together = llama.chat_variants(COPY, [GREEDY, GREEDY, Variant(0.0, 5)], max_tokens=48)
    assert together[0].text == together[1].text == alone.text
    assert alone.text.startswith("```sql\nSELECT COUNT(*) FROM orders")
    assert "```" not in alone.text[7:]
    assert "orders" in together[2].text.lower()  # no prefix: the model's own reply
    assert all(r.completion_tokens > 0 and r.prompt_tokens > 0 for r in together)
    assert together[0].metadata["decoded_together"] == 3
    _only_the_prompt_is_left(llama, COPY)


def test_samples_differ_by_seed_and_repeat_with_it(llama):
    variants = [GREEDY] + [Variant(1.0, seed) for seed in (1, 2, 3)]
    # the whole prompt is live before both calls: each takes the logits of its last token from a
    # batch of one (a prompt prefilled in one batch may part from it at a near tie)
    llama.chat_variants(ASK, [GREEDY, GREEDY], max_tokens=1)
    first = [r.text for r in llama.chat_variants(ASK, variants, max_tokens=40)]
    again = [r.text for r in llama.chat_variants(ASK, variants, max_tokens=40)]
    assert first == again
    assert len(set(first[1:])) > 1, first  # three seeds at temperature 1: not all alike


def test_more_variants_than_sequences_are_decoded_in_turns(llama):
    replies = llama.chat_variants(COPY, [GREEDY] * 6, max_tokens=24)
    assert len({r.text for r in replies}) == 1
    assert [r.metadata["decoded_together"] for r in replies] == [4, 4, 4, 4, 2, 2]


def test_limits_timeouts_and_a_context_too_small_leave_the_context_usable(llama):
    short = llama.chat_variants(ASK, [GREEDY, Variant(0.7, 1)], max_tokens=2)
    assert [r.completions[0].finish_reason for r in short] == ["length", "length"]
    with pytest.raises(LLMTimeoutError):
        llama.chat_variants(ASK, [GREEDY, Variant(0.7, 1)], max_tokens=40, timeout=1e-6)
    _only_the_prompt_is_left(llama, ASK)
    with pytest.raises(LLMError, match=r"need \d+ tokens"):
        llama.chat_variants(ASK, [GREEDY] * 3, max_tokens=1000)  # 3 x 1000 > 2048
    assert chat_variants(llama, ASK, [GREEDY, GREEDY], max_tokens=48)[0].text.startswith("```sql")


def test_a_context_of_one_sequence_is_refused_and_chat_variants_goes_one_by_one(model_path):
    single = LlamaCppLLM(model_path, n_ctx=1024, n_threads=2)
    assert not single.variants_together and single.parallel_sequences == 1
    with pytest.raises(LLMError, match="context holds 1"):
        decode_parallel(single._llama, [1, 2, 3], [SequenceRequest((), 0.0, 0, 4)] * 2)
    replies = single.chat_variants(COPY, [GREEDY, GREEDY], max_tokens=24)
    assert replies[0].text == replies[1].text and replies[0].text.startswith("```sql\n")
    assert "decoded_together" not in replies[0].metadata


def test_prompt_states_of_a_multi_sequence_context_are_restored(model_path, tmp_path):
    folder = cache_folder(tmp_path, model_path, 2048, 4)
    assert folder.name.endswith("-ctx2048-seq4")
    first = PromptStateCache(folder)
    llm = LlamaCppLLM(model_path, n_ctx=2048, n_threads=2, prompt_cache=first, parallel_sequences=4)
    first.min_new = 1
    expected = [r.text for r in llm.chat_variants(COPY, [GREEDY, Variant(0.8, 1)], max_tokens=32)]
    assert first.stored == 1
    later = PromptStateCache(folder)  # another process
    again = LlamaCppLLM(
        model_path, n_ctx=2048, n_threads=2, prompt_cache=later, parallel_sequences=4
    )
    replies = again.chat_variants(COPY, [GREEDY, Variant(0.8, 1)], max_tokens=32)
    assert later.restored == 1 and replies[0].text == expected[0]
    # a sample may differ: the last prompt token's logits come from a batch of one token now
    assert "orders" in replies[1].text.lower()
    _only_the_prompt_is_left(again, COPY)
