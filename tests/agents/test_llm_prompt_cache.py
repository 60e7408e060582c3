"""Context states kept on disk: a prompt that starts like an earlier one is not prefilled again,
in another process either (a second model instance stands for it), and answers stay the same."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agents.llm.llamacpp import LlamaCppLLM
from agents.llm.prompt_cache import PromptStateCache, cache_folder, shared_prefix

SCHEMA = "\n".join(
    f"CREATE TABLE t{i} (id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER);"
    for i in range(30)
)
OTHER_SCHEMA = "\n".join(
    f"CREATE TABLE orders_{i} (order_id INTEGER, amount REAL, placed_at DATE);" for i in range(30)
)


def ask(schema: str, question: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "Write one SQLite query."},
        {"role": "user", "content": f"### Schema\n{schema}\n\n### Question\n{question}"},
    ]


@pytest.fixture(scope="module")
def model_path(embedded_model_path: Path) -> str:
    return str(embedded_model_path)


def load(model_path: str, cache: PromptStateCache | None) -> LlamaCppLLM:
    return LlamaCppLLM(model_path, n_ctx=2048, n_threads=2, seed=3, prompt_cache=cache)


def reply(llm: LlamaCppLLM, messages: list[dict[str, str]]) -> str:
    return llm.chat(messages, max_tokens=24, stop=["```"], reply_prefix="```sql\n").text


def test_shared_prefix_counts_leading_equal_tokens():
    assert shared_prefix([1, 2, 3], [1, 2, 4, 5]) == 2
    assert shared_prefix([1, 2], [1, 2, 3]) == 2
    assert shared_prefix([], [1]) == 0
    assert shared_prefix(np.array([7, 8]), [9]) == 0


@pytest.mark.slow  # loads the real model
def test_a_new_process_restores_the_schema_and_answers_the_same(model_path, tmp_path):
    folder = cache_folder(tmp_path, model_path, 2048)
    first = PromptStateCache(folder)
    question = ask(SCHEMA, "How many rows does t3 have?")
    expected = reply(load(model_path, first), question)
    assert first.stored == 1 and len(first.entries()) == 1

    later = PromptStateCache(folder)  # another process, same folder
    llm = load(model_path, later)
    assert reply(llm, question) == expected
    assert later.restored == 1
    other_question = ask(SCHEMA, "List the names in t5 from France.")
    uncached = reply(load(model_path, None), other_question)
    assert reply(llm, other_question) == uncached
    assert later.restored == 1  # the live context already held the schema


@pytest.mark.slow  # loads the real model
def test_one_state_per_leading_block_and_the_oldest_goes_past_the_size_limit(model_path, tmp_path):
    cache = PromptStateCache(tmp_path / "states")
    llm = load(model_path, cache)
    reply(llm, ask(SCHEMA, "How many rows does t1 have?"))
    reply(llm, ask(OTHER_SCHEMA, "Total amount of orders_2?"))
    assert len(cache.entries()) == 2
    cache.min_new = 1  # store even what the live context mostly held
    reply(llm, ask(OTHER_SCHEMA, "Largest amount in orders_4?"))
    entries = cache.entries()
    assert len(entries) == 2  # the new orders state replaced the old one
    newest = max(entries, key=lambda e: e.path.stat().st_mtime)
    assert b"Largest" in llm._llama.detokenize(list(newest.tokens))

    cache.max_bytes = newest.path.stat().st_size  # room for one: the least recently used goes
    cache.evict()
    assert [e.key for e in cache.entries()] == [newest.key]


@pytest.mark.slow  # loads the real model
def test_a_state_that_does_not_load_is_dropped_and_the_answer_is_still_right(model_path, tmp_path):
    folder = tmp_path / "states"
    question = ask(SCHEMA, "How many rows does t3 have?")
    expected = reply(load(model_path, PromptStateCache(folder)), question)
    (state,) = folder.glob("*.state")
    state.write_bytes(b"not a llama.cpp state" * 100)

    cache = PromptStateCache(folder)
    cache.min_new = 10**6  # do not store again: see that the broken entry is gone
    assert reply(load(model_path, cache), question) == expected
    assert cache.restored == 0 and cache.entries() == []


@pytest.mark.slow  # loads the real model
def test_an_unwritable_folder_costs_speed_not_the_answer(model_path, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder should be")
    cache = PromptStateCache(Path(blocker) / "states")
    assert reply(load(model_path, cache), ask(SCHEMA, "How many rows does t3 have?"))
    assert cache.stored == 0
