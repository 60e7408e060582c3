"""Token log probabilities from the real embedded model (Qwen2.5-Coder 0.5B): one reply at a
time (with and without a reply prefix, after a reused prefix and a restored prompt state) and
replies decoded together."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agents.llm.llamacpp import LlamaCppLLM
from agents.llm.prompt_cache import PromptStateCache, cache_folder
from agents.llm.variants import Variant

SYSTEM = {"role": "system", "content": "You write SQLite SQL. Answer with SQL only."}
ASK = [SYSTEM, {"role": "user", "content": "Count the rows of table orders placed in 2024."}]
OTHER = [SYSTEM, {"role": "user", "content": "List the names of all customers."}]
COPY = [  # one clear answer: greedy replies alone and together are the same text
    SYSTEM,
    {"role": "user", "content": "Repeat this query exactly: SELECT COUNT(*) FROM orders;"},
]
FENCE = "```sql\n"
GREEDY = Variant(0.0, 0, FENCE, ("```",))

pytestmark = (
    pytest.mark.slow
)  # one model load and ~15 short replies: 4 s alone, 22 s on 2 busy cores


@pytest.fixture(scope="module")
def llama(embedded_model_path: Path) -> LlamaCppLLM:
    return LlamaCppLLM(
        str(embedded_model_path), n_ctx=2048, n_threads=2, seed=7, parallel_sequences=4
    )


def _generated_tokens(llm: LlamaCppLLM, text: str) -> int:
    return len(llm._llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))


def _check(llm: LlamaCppLLM, logprobs: tuple[float, ...] | None, generated: str) -> None:
    """Log probabilities of a greedy reply: one per generated token (the last one may be
    missing), none above 0, likely on the whole."""
    assert logprobs is not None
    assert abs(len(logprobs) - _generated_tokens(llm, generated)) <= 1, (logprobs, generated)
    assert all(v <= 0.0 for v in logprobs)
    assert np.mean(logprobs) > -2.0 and max(logprobs) > -0.05  # greedy picks the likeliest


def test_a_reply_has_the_log_probability_of_each_token_it_generated(llama):
    free = llama.chat(ASK, max_tokens=64).completions[0]  # llama.cpp's own chat handler
    assert free.finish_reason == "stop" and "orders" in free.text.lower()
    _check(llama, free.logprobs, free.text)
    fenced = llama.chat(ASK, max_tokens=64, reply_prefix=FENCE, stop=["```"]).completions[0]
    _check(llama, fenced.logprobs, fenced.text[len(FENCE) :])
    # the same prompt again: llama.cpp evaluates its last token once more, which is no reply's.
    # The values agree to a few hundredths only: that token is evaluated in a batch of another
    # shape, which on some CPUs' kernels (AMD EPYC here) moves a log probability by up to 0.03;
    # a reply's values shifted by one token would differ by far more.
    again = llama.chat(ASK, max_tokens=64, reply_prefix=FENCE, stop=["```"]).completions[0]
    assert again.text == fenced.text and again.logprobs is not None
    assert len(again.logprobs) == len(fenced.logprobs or ())
    assert again.logprobs == pytest.approx(fenced.logprobs, abs=0.1)
    short = llama.chat(ASK, max_tokens=4).completions[0]
    assert short.finish_reason == "length" and short.logprobs is not None
    assert len(short.logprobs) == 3  # the last token is never evaluated
    sampled = llama.chat(ASK, n=2, temperature=1.0, max_tokens=24).completions
    assert all(c.logprobs and all(v <= 0.0 for v in c.logprobs) for c in sampled)


def test_a_restored_prompt_state_adds_no_log_probability(llama, embedded_model_path, tmp_path):
    first = llama.chat(COPY, max_tokens=32, reply_prefix=FENCE, stop=["```"]).completions[0]
    folder = cache_folder(tmp_path, str(embedded_model_path), 2048, 4)
    llama.prompt_cache = cache = PromptStateCache(folder, min_gain=1, min_new=1)
    try:
        llama.chat(COPY, max_tokens=32, reply_prefix=FENCE, stop=["```"])  # stored
        llama.chat(OTHER, max_tokens=8)  # the context now holds another prompt
        restored = llama.chat(COPY, max_tokens=32, reply_prefix=FENCE, stop=["```"])
    finally:
        llama.prompt_cache = None
    assert cache.restored == 1 and restored.text == first.text
    # as many as before (the re-evaluated prompt token adds none); the values differ a little,
    # the prompt having been prefilled in batches of other shapes
    assert len(restored.completions[0].logprobs or ()) == len(first.logprobs or ())
    assert restored.completions[0].logprobs == pytest.approx(first.logprobs, abs=0.05)


def test_replies_decoded_together_have_them_and_agree_with_one_at_a_time(llama):
    alone = llama.chat(COPY, max_tokens=48, reply_prefix=FENCE, stop=["```"])
    together = llama.chat_variants(COPY, [GREEDY, Variant(0.8, 3), Variant(0.0, 5)], max_tokens=48)
    greedy = together[0].completions[0]
    assert greedy.text == alone.text
    assert greedy.logprobs is not None and len(greedy.logprobs) == together[0].completion_tokens
    assert np.mean(greedy.logprobs) == pytest.approx(
        np.mean(alone.completions[0].logprobs), abs=0.05
    )
    _check(llama, greedy.logprobs, greedy.text[len(FENCE) :])
    for reply in together[1:]:
        logprobs = reply.completions[0].logprobs
        assert logprobs is not None and len(logprobs) == reply.completion_tokens
        assert all(v <= 0.0 for v in logprobs)
