"""A response cache around any :class:`~agents.llm.base.LLM`, for benchmarks and repeated runs.

::

    llm = CachedLLM(LlamaCppLLM(path), Path("bench/out/llm-cache.sqlite"))
    llm.chat(messages, n=3, temperature=0.7)   # asks the model, stores the answer
    llm.chat(messages, n=3, temperature=0.7)   # served from the file: metadata["cached"] is True

The key is the SHA-256 of the canonical JSON (sorted keys, compact, UTF-8) of
``(inner.name, messages, n, temperature, max_tokens, stop, json_schema)``; ``timeout`` is left
out because it does not change the answer. Sampled calls (``temperature > 0``) are replayed
too: that is the point for a benchmark that must be repeatable.

The file is SQLite in WAL mode with a busy timeout, so several threads (one connection
behind a lock) and several processes (each with its own connection) share it safely. Errors
are never stored: a failed call fails again on the next try instead of being replayed, and a
cancelled one (the current :class:`~agents.llm.base.Cancellation` reaches ``inner`` as it is)
is asked again in full.
Two callers asking the same new key at once may both reach the model; the later answer
wins the row and both answers are equally valid. A reply keeps its token log probabilities;
one stored before they were kept comes back without them (None).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agents.llm.base import LLM, ChatResult, Completion, LLMWrapper, Message
from agents.llm.variants import Variant, variants_of

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 30_000
_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    value TEXT NOT NULL,
    created REAL NOT NULL
)
"""


def cache_key(
    model: str,
    messages: Sequence[Message],
    *,
    n: int,
    temperature: float,
    max_tokens: int,
    stop: Sequence[str] | None,
    json_schema: dict[str, Any] | None,
    seed: int | None = None,
    reply_prefix: str | None = None,
) -> str:
    """SHA-256 hex digest of the canonical JSON of a call's answer-shaping arguments."""
    request = {
        "model": model,
        "messages": [dict(message) for message in messages],
        "n": int(n),
        "temperature": float(temperature),
        "max_tokens": int(max_tokens),
        "stop": list(stop) if stop else None,
        "json_schema": json_schema,
        "seed": seed,
    }
    if reply_prefix:  # keys of calls without one stay what they were
        request["reply_prefix"] = reply_prefix
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class CachedLLM(LLMWrapper):
    """An :class:`LLM` that answers repeated calls from a SQLite file.

    Args:
        inner: The model that answers cache misses.
        path: The SQLite file (created with its folder when missing).

    Attributes:
        hits: Calls answered from the file by this object.
        misses: Calls that went to ``inner`` (failed ones included).
    """

    def __init__(self, inner: LLM, path: Path) -> None:
        self.inner, self.name, self.path = inner, inner.name, Path(path)
        self.hits = self.misses = 0
        # 0700 / 0600: prompts and replies hold the knowledge they quote
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not self.path.exists():
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600))
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False, isolation_level=None
        )
        self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        # switching to WAL takes the file alone and does not wait on the busy handler: another
        # process opening the same file at that moment makes it fail at once ("locked")
        _retried_while_locked(lambda: self._conn.execute("PRAGMA journal_mode = WAL"))
        self._conn.execute("PRAGMA synchronous = NORMAL")
        _retried_while_locked(lambda: self._conn.execute(_SCHEMA))

    def chat(
        self,
        messages: Sequence[Message],
        *,
        n: int = 1,
        temperature: float = 0.0,
        max_tokens: int = 512,
        stop: Sequence[str] | None = None,
        json_schema: dict[str, Any] | None = None,
        timeout: float | None = None,
        seed: int | None = None,
        reply_prefix: str | None = None,
    ) -> ChatResult:
        started = time.perf_counter()
        options: dict[str, Any] = {
            "n": n,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "stop": stop,
            "json_schema": json_schema,
            "seed": seed,
            "reply_prefix": reply_prefix,
        }
        key = cache_key(self.name, messages, **options)
        stored = self._load(key)
        if stored is not None:
            with self._lock:
                self.hits += 1
            return _from_json(stored, time.perf_counter() - started)
        with self._lock:
            self.misses += 1
        result = self.inner.chat(messages, timeout=timeout, **options)  # errors propagate
        self._store(key, result)
        result.metadata.setdefault("cached", False)
        return result

    def chat_variants(
        self,
        messages: Sequence[Message],
        variants: Sequence[Variant],
        *,
        max_tokens: int = 512,
        timeout: float | None = None,
    ) -> list[ChatResult]:
        """Each variant under the key of the equivalent ``chat`` call; the missing ones are
        asked of ``inner`` together."""
        started = time.perf_counter()
        base = {"n": 1, "max_tokens": max_tokens, "json_schema": None, "stop": None}
        keys = [cache_key(self.name, messages, **{**base, **v.chat_options()}) for v in variants]
        stored = [self._load(key) for key in keys]
        missing = [i for i, value in enumerate(stored) if value is None]
        with self._lock:
            self.hits += len(variants) - len(missing)
            self.misses += len(missing)
        replies: dict[int, ChatResult] = {}
        if missing:
            asked = [variants[i] for i in missing]
            fresh = variants_of(self.inner, messages, asked, max_tokens=max_tokens, timeout=timeout)
            for i, result in zip(missing, fresh, strict=True):
                self._store(keys[i], result)
                result.metadata.setdefault("cached", False)
                replies[i] = result
        lookup = time.perf_counter() - started
        for i, value in enumerate(stored):
            if value is not None:
                replies[i] = _from_json(value, lookup)
        return [replies[i] for i in range(len(variants))]

    def __len__(self) -> int:
        """Number of stored answers (all processes)."""
        with self._lock:
            return self._conn.execute("SELECT count(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> CachedLLM:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ internals
    def _load(self, key: str) -> str | None:
        with self._lock:
            row = self._conn.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def _store(self, key: str, result: ChatResult) -> None:
        value = json.dumps(_to_dict(result), ensure_ascii=False, default=str)
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO responses (key, model, value, created) VALUES (?, ?, ?, ?)",
                (key, self.name, value, time.time()),
            )
        log.debug("cached %s answer %s", self.name, key[:12])


def _retried_while_locked(statement: Callable[[], object]) -> None:
    """Run ``statement``, again while SQLite says the file is locked, for up to the busy
    timeout."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            statement()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.05)


def _to_dict(result: ChatResult) -> dict[str, Any]:
    return {
        "completions": [
            {
                "text": c.text,
                "finish_reason": c.finish_reason,
                "logprobs": None if c.logprobs is None else list(c.logprobs),
            }
            for c in result.completions
        ],
        "model": result.model,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "latency_s": result.latency_s,
        "metadata": result.metadata,
    }


def _from_json(value: str, lookup_s: float) -> ChatResult:
    data = json.loads(value)
    metadata = {
        **data.get("metadata", {}),
        "cached": True,
        "original_latency_s": data["latency_s"],
    }
    return ChatResult(
        completions=[_completion(c) for c in data["completions"]],
        model=data["model"],
        prompt_tokens=data["prompt_tokens"],
        completion_tokens=data["completion_tokens"],
        latency_s=lookup_s,
        metadata=metadata,
    )


def _completion(stored: dict[str, Any]) -> Completion:
    """A stored completion; one stored before log probabilities were kept has None."""
    logprobs = stored.get("logprobs")
    return Completion(
        stored["text"],
        stored["finish_reason"],
        None if logprobs is None else tuple(float(v) for v in logprobs),
    )
