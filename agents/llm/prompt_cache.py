"""Prompt states on disk for the in-process llama.cpp backend.

llama.cpp reuses the longest token prefix its context shares with the prompt it evaluated
last. A prompt that starts like one from an earlier process, or like one asked before another
database's question, is prefilled again from its first token: on 2 cores the 1.5B model
prefills ~75 tokens/s, so a 1,000-token schema costs ~14 s. :class:`PromptStateCache` keeps
the context's state (its KV cache, ~29 KB per token for the 1.5B) after a call, keyed by the
tokens it holds. Before a call, the entry sharing the longest prefix with the new prompt is
restored when it beats the live context (~0.05 s for 30 MB), so only the rest is prefilled.

One entry per leading block: a new state replaces the entries it shares at least
``replace_shared`` tokens with (the same system prompt and schema), so the cache holds about
one state per database and model. Entries past ``max_bytes`` go, least recently used first.
Several processes may share the folder: files are written whole and renamed into place, and
an entry another process removed is skipped.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

STATE_SUFFIX = ".state"
TOKENS_SUFFIX = ".tokens.npy"


@dataclass(frozen=True)
class PromptState:
    """One stored context: the tokens it holds and the file of its state."""

    key: str
    tokens: np.ndarray
    path: Path


def shared_prefix(a: Sequence[int] | np.ndarray, b: Sequence[int] | np.ndarray) -> int:
    """How many leading tokens ``a`` and ``b`` have in common."""
    left, right = np.asarray(a, dtype=np.int32), np.asarray(b, dtype=np.int32)
    n = min(len(left), len(right))
    differ = np.flatnonzero(left[:n] != right[:n])
    return int(differ[0]) if len(differ) else n


class PromptStateCache:
    """llama.cpp context states in ``directory`` (one folder per model and context size).

    Args:
        directory: The folder; created on first store.
        max_bytes: Total size of the states kept.
        min_gain: Restore an entry only when it covers this many more prompt tokens than the
            live context does (restoring costs about as much as prefilling a few tokens).
        min_new: Store a state only after a call that prefilled this many tokens.
        replace_shared: A new state replaces the entries it shares this many tokens with.
    """

    def __init__(
        self,
        directory: Path,
        *,
        max_bytes: int = 2 << 30,
        min_gain: int = 32,
        min_new: int = 128,
        replace_shared: int = 256,
    ) -> None:
        self.directory = Path(directory)
        self.max_bytes, self.min_gain = max_bytes, min_gain
        self.min_new, self.replace_shared = min_new, replace_shared
        self._tokens: dict[str, np.ndarray] = {}
        self.restored = self.stored = 0

    def entries(self) -> list[PromptState]:
        """The states on disk now (token lists are read once per entry)."""
        if not self.directory.is_dir():
            return []
        found: list[PromptState] = []
        for path in self.directory.glob(f"*{STATE_SUFFIX}"):
            key = path.name[: -len(STATE_SUFFIX)]
            tokens = self._tokens.get(key)
            if tokens is None:
                try:
                    tokens = np.load(self.directory / f"{key}{TOKENS_SUFFIX}")
                except (OSError, ValueError):
                    continue  # being written or removed by another process
                self._tokens[key] = tokens
            found.append(PromptState(key, tokens, path))
        return found

    def best(self, prompt: Sequence[int], live: int) -> tuple[PromptState, int] | None:
        """The entry sharing the longest prefix with ``prompt`` when it beats ``live`` tokens.

        The shared part stops one token short of the prompt: llama.cpp must evaluate at least
        one token to have logits to sample from.
        """
        best: tuple[PromptState, int] | None = None
        for entry in self.entries():
            shared = min(shared_prefix(entry.tokens, prompt), len(prompt) - 1)
            if shared >= live + self.min_gain and (best is None or shared > best[1]):
                best = (entry, shared)
        return best

    def restore(self, llama: Any, entry: PromptState, keep: int | None = None) -> bool:
        """Load ``entry`` into ``llama``'s context, cut to its first ``keep`` tokens (the part
        shared with the next prompt, so at least one prompt token is evaluated again and the
        logits are fresh); False (and the entry dropped) if it does not load."""
        import llama_cpp

        started = time.perf_counter()
        try:
            data = entry.path.read_bytes()
        except OSError:
            return False
        buffer = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        read = llama_cpp.llama_state_set_data(llama._ctx.ctx, buffer, len(data))
        if read != len(data):
            log.warning("prompt state %s does not fit this model; dropped", entry.path)
            llama.reset()
            llama._ctx.kv_cache_clear()
            self._remove(entry.key)
            return False
        n = len(entry.tokens) if keep is None else min(keep, len(entry.tokens))
        llama._ctx.kv_cache_seq_rm(-1, n, -1)
        llama.input_ids[:n] = entry.tokens[:n]
        llama.n_tokens = n
        llama._requires_eval = True  # the logits are not live: evaluate at least one token
        os.utime(entry.path)
        self.restored += 1
        log.debug(
            "restored %d prompt tokens from %s in %.3f s",
            n,
            entry.path.name,
            time.perf_counter() - started,
        )
        return True

    def store(self, llama: Any) -> None:
        """Save ``llama``'s current context, replacing the entries it supersedes."""
        import llama_cpp

        tokens = np.array(llama.input_ids[: llama.n_tokens], dtype=np.int32)
        if not len(tokens):
            return
        size = llama_cpp.llama_state_get_size(llama._ctx.ctx)
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_get_data(llama._ctx.ctx, buffer, size)
        data = ctypes.string_at(buffer, written)
        key = hashlib.sha1(tokens.tobytes()).hexdigest()[:20]
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)  # states hold prompts
        for entry in self.entries():
            if entry.key != key and shared_prefix(entry.tokens, tokens) >= self.replace_shared:
                self._remove(entry.key)
        _write_whole(self.directory / f"{key}{TOKENS_SUFFIX}", _npy_bytes(tokens))
        _write_whole(self.directory / f"{key}{STATE_SUFFIX}", data)
        self._tokens[key] = tokens
        self.stored += 1
        self.evict()

    def evict(self) -> None:
        """Remove the least recently used states until the rest fit in ``max_bytes``."""
        entries = []
        for entry in self.entries():
            try:
                stat = entry.path.stat()
            except OSError:
                continue
            entries.append((stat.st_mtime, stat.st_size, entry.key))
        total = sum(size for _, size, _ in entries)
        for _, size, key in sorted(entries):
            if total <= self.max_bytes:
                break
            self._remove(key)
            total -= size

    def _remove(self, key: str) -> None:
        self._tokens.pop(key, None)
        for suffix in (STATE_SUFFIX, TOKENS_SUFFIX):
            (self.directory / f"{key}{suffix}").unlink(missing_ok=True)


def _npy_bytes(tokens: np.ndarray) -> bytes:
    import io

    out = io.BytesIO()
    np.save(out, tokens)
    return out.getvalue()


def _write_whole(path: Path, data: bytes) -> None:
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        partial.write_bytes(data)
        os.replace(partial, path)
    except OSError:
        partial.unlink(missing_ok=True)  # a full disk keeps no half file
        raise


def cache_folder(root: Path, model_path: str, n_ctx: int, sequences: int = 1) -> Path:
    """The folder of one model file (by name, size and time) at one context size and number
    of parallel sequences (a state holds the context's layout)."""
    stat = Path(model_path).stat()
    stem = Path(model_path).stem
    fingerprint = hashlib.sha1(f"{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:10]
    layout = f"ctx{n_ctx}" + (f"-seq{sequences}" if sequences > 1 else "")
    return Path(root) / f"{stem}-{fingerprint}-{layout}"
