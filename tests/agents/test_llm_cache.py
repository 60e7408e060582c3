"""The response cache: hits and misses, what makes a key, errors, threads, processes, reopening."""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path

import pytest

from agents.llm.base import ChatResult, Completion, LLMError, LLMOutputError
from agents.llm.cache import CachedLLM, cache_key

ASK = [{"role": "user", "content": "Count the rows of table orders."}]


class CountingLLM:
    """Answers ``answer #k`` (k = how many calls it has served) or raises when told to."""

    def __init__(self, name: str = "scripted", fail: Exception | None = None) -> None:
        self.name, self.fail, self.calls = name, fail, 0
        self._lock = threading.Lock()

    def chat(self, messages, **options) -> ChatResult:
        with self._lock:
            self.calls += 1
            call = self.calls
        if self.fail is not None:
            raise self.fail
        texts = [f"answer #{call}.{i} to {messages[-1]['content']}" for i in range(options["n"])]
        return ChatResult(
            [Completion(text, "stop") for text in texts],
            self.name,
            prompt_tokens=11,
            completion_tokens=7,
            latency_s=1.5,
            metadata={"backend": "test"},
        )


def test_a_repeated_call_is_a_hit_with_the_original_answer(tmp_path: Path) -> None:
    inner = CountingLLM()
    with CachedLLM(inner, tmp_path / "cache" / "llm.sqlite") as llm:
        first = llm.chat(ASK, n=2, temperature=0.7, timeout=5)
        again = llm.chat(ASK, n=2, temperature=0.7, timeout=99)  # the timeout is not in the key
        assert inner.calls == 1 and (llm.hits, llm.misses) == (1, 1) and len(llm) == 1
    assert [c.text for c in again.completions] == [c.text for c in first.completions]
    assert again.completions[0].finish_reason == "stop" and again.model == "scripted"
    assert (again.prompt_tokens, again.completion_tokens) == (11, 7)
    assert again.metadata == {"backend": "test", "cached": True, "original_latency_s": 1.5}
    assert first.metadata["cached"] is False and first.latency_s == 1.5


@pytest.mark.parametrize(
    "change",
    [
        {"messages": [{"role": "user", "content": "Count the rows of table items."}]},
        {"n": 3},
        {"temperature": 0.2},
        {"max_tokens": 64},
        {"stop": [";"]},
        {"json_schema": {"type": "object"}},
        {"seed": 7},
        {"reply_prefix": "```sql\n"},
    ],
)
def test_any_answer_shaping_option_is_a_different_key(tmp_path: Path, change: dict) -> None:
    inner = CountingLLM()
    llm = CachedLLM(inner, tmp_path / "llm.sqlite")
    base = {"messages": ASK, "n": 1, "temperature": 0.0, "max_tokens": 512, "stop": None}
    llm.chat(**base)
    llm.chat(**{**base, **change})
    assert inner.calls == 2 and llm.misses == 2 and llm.hits == 0


def test_the_key_is_canonical_and_names_the_model() -> None:
    options = {"n": 1, "max_tokens": 8, "stop": None, "json_schema": {"b": 1, "a": [1, 2]}}
    key = cache_key("m", ASK, temperature=0, **options)
    assert key == cache_key("m", ASK, temperature=0.0, **options)  # 0 and 0.0 are one value
    assert key == cache_key(
        "m", ASK, temperature=0.0, **{**options, "json_schema": {"a": [1, 2], "b": 1}}
    )
    assert key != cache_key("other", ASK, temperature=0.0, **options)
    assert len(key) == 64
    # calls without a reply prefix keep the keys they had before the option existed
    assert key == cache_key("m", ASK, temperature=0.0, reply_prefix=None, **options)


def test_errors_are_never_cached(tmp_path: Path) -> None:
    inner = CountingLLM(fail=LLMOutputError("model output is not JSON", "{broken"))
    llm = CachedLLM(inner, tmp_path / "llm.sqlite")
    for _ in range(2):
        with pytest.raises(LLMError, match="not JSON"):
            llm.chat(ASK, json_schema={"type": "object"})
    assert inner.calls == 2 and len(llm) == 0 and llm.misses == 2
    inner.fail = None
    assert llm.chat(ASK, json_schema={"type": "object"}).text.startswith("answer #3")
    assert len(llm) == 1


def test_two_threads_share_one_cache(tmp_path: Path) -> None:
    inner = CountingLLM()
    llm = CachedLLM(inner, tmp_path / "llm.sqlite")
    questions = [[{"role": "user", "content": f"question {i}"}] for i in range(20)]
    answers: dict[tuple[str, int], str] = {}

    def work(worker: str) -> None:
        for _ in range(2):
            for i, messages in enumerate(questions):
                answers[(worker, i)] = llm.chat(messages).text.split(" ", 2)[2]

    threads = [threading.Thread(target=work, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert llm.hits + llm.misses == 80 and inner.calls == llm.misses
    assert 20 <= llm.misses <= 40 and len(llm) == 20  # a key may be asked by both at once
    assert all(answers[("a", i)] == answers[("b", i)] == f"to question {i}" for i in range(20))


def _fill(path: str, start: int) -> int:
    llm = CachedLLM(CountingLLM(), Path(path))
    for i in range(start, start + 30):
        llm.chat([{"role": "user", "content": f"question {i % 40}"}])
    llm.close()
    return llm.misses


def test_two_processes_write_one_file(tmp_path: Path) -> None:
    path = str(tmp_path / "llm.sqlite")
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        misses = pool.starmap(_fill, [(path, 0), (path, 10)])  # 20 questions in common
    reader = CachedLLM(CountingLLM(), Path(path))
    assert len(reader) == 40 and 40 <= sum(misses) <= 60


def test_answers_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "llm.sqlite"
    with CachedLLM(CountingLLM(), path) as llm:
        stored = llm.chat(ASK, max_tokens=32).text
    inner = CountingLLM()
    with CachedLLM(inner, path) as reopened:
        assert reopened.chat(ASK, max_tokens=32).text == stored
        assert inner.calls == 0 and reopened.hits == 1
    with CachedLLM(CountingLLM(name="another model"), path) as other:
        other.chat(ASK, max_tokens=32)
        assert other.misses == 1  # the model's name is part of the key


class _WithLogprobs:
    name = "scored"

    def chat(self, messages, **options) -> ChatResult:
        return ChatResult([Completion("SELECT 1", "stop", (-0.25, -1.5)), Completion("x")], "m")


def test_token_logprobs_are_kept_and_entries_from_before_them_load_without(tmp_path: Path) -> None:
    path = tmp_path / "llm.sqlite"
    with CachedLLM(_WithLogprobs(), path) as llm:
        llm.chat(ASK, n=2)
        again = llm.chat(ASK, n=2)
        assert again.metadata["cached"] is True
        assert [c.logprobs for c in again.completions] == [(-0.25, -1.5), None]
        old = (
            '{"completions": [{"text": "SELECT 2", "finish_reason": "stop"}], "model": "m", '
            '"prompt_tokens": 1, "completion_tokens": 1, "latency_s": 0.5, "metadata": {}}'
        )
        options = {"n": 1, "temperature": 0.0, "max_tokens": 512, "stop": None}
        key = cache_key(llm.name, ASK, json_schema=None, **options)
        llm._conn.execute(
            "INSERT INTO responses (key, model, value, created) VALUES (?, ?, ?, 0)",
            (key, llm.name, old),
        )
        legacy = llm.chat(ASK, **options)
        assert legacy.metadata["cached"] is True and legacy.text == "SELECT 2"
        assert legacy.completions[0].logprobs is None
