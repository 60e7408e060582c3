"""Several replies to one prompt decoded together: llama.cpp sequences in one batch.

On a CPU a decoding step reads every weight of the model once, whatever the number of tokens
it computes; a second or fifth sequence in the same step costs a fraction of a step of its
own. The prompt is evaluated once, in sequence 0, and shared by the other sequences (a
unified KV cache holds a shared cell once); each reply then appends its own suffix (the reply
prefix it starts with) and is sampled with its own temperature and seed until it stops.

The context must have been created with ``n_seq_max`` ≥ the number of replies and a unified
KV cache (:func:`multi_sequence_context`). Afterwards the context holds the prompt alone in
sequence 0, as after a one-sequence call, so llama-cpp-python's prefix reuse and the prompt
state cache go on working; so does a call stopped by the current
:class:`~agents.llm.base.Cancellation` (looked at before each decoding step).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agents.llm.base import LLMError, LLMTimeoutError, raise_if_cancelled
from agents.llm.logprobs import token_logprob

# the sampler llama-cpp-python's completions use by default (see agents.llm.llamacpp)
TOP_K, TOP_P, MIN_P = 40, 0.95, 0.05


@dataclass(frozen=True)
class SequenceRequest:
    """One reply: the tokens it starts with after the shared prompt, and how it is sampled."""

    suffix: tuple[int, ...]
    temperature: float
    seed: int
    max_tokens: int
    stop: tuple[str, ...] = ()


@dataclass
class SequenceReply:
    """One reply: its text, its tokens, and each token's log probability (see
    :mod:`agents.llm.logprobs`; an end-of-generation token is not part of it)."""

    text: str = ""
    tokens: list[int] = field(default_factory=list)
    finish_reason: str | None = None
    logprobs: list[float] = field(default_factory=list)


def multi_sequence_context(llama: Any, sequences: int) -> None:
    """Recreate ``llama``'s context for ``sequences`` parallel sequences in a unified KV cache
    (llama-cpp-python sets ``n_seq_max`` only for embedding models)."""
    import llama_cpp
    from llama_cpp import _internals

    params = llama.context_params
    if params.n_seq_max >= sequences and params.kv_unified:
        return
    params.n_seq_max = min(sequences, llama_cpp.llama_max_parallel_sequences())
    params.kv_unified = True
    llama._ctx.close()
    llama._ctx = llama._stack.enter_context(
        contextlib.closing(
            _internals.LlamaContext(model=llama._model, params=params, verbose=llama.verbose)
        )
    )
    llama.n_tokens = 0


def sequence_capacity(llama: Any) -> int:
    """Replies :func:`decode_parallel` can decode at once with ``llama``'s context."""
    params = llama.context_params
    return int(params.n_seq_max) if params.kv_unified else 1


def decode_parallel(
    llama: Any,
    prompt: Sequence[int],
    requests: Sequence[SequenceRequest],
    *,
    reused: int | None = None,
    deadline: float | None = None,
) -> list[SequenceReply]:
    """Each request's reply to ``prompt``, decoded in one batch per step.

    Args:
        llama: a ``llama_cpp.Llama`` whose context holds enough sequences.
        prompt: the shared prompt's tokens (chat template rendered, assistant turn opened).
        requests: one per reply, at most :func:`sequence_capacity`.
        reused: prompt tokens already in the context's sequence 0 (default: llama-cpp-python's
            record of its tokens); at least the last prompt token is evaluated again.
        deadline: ``time.perf_counter()`` past which :class:`LLMTimeoutError` is raised.

    Raises:
        LLMError: too many requests, or the prompt and replies do not fit the context.
        LLMCancelledError: the current cancellation token was cancelled.
    """
    if not prompt:
        raise LLMError("parallel decoding needs a prompt")
    if len(requests) > sequence_capacity(llama):
        raise LLMError(
            f"{len(requests)} replies asked at once; the context holds {sequence_capacity(llama)}"
        )
    needed = len(prompt) + sum(len(r.suffix) + r.max_tokens for r in requests)
    if needed > llama.n_ctx():
        raise LLMError(
            f"prompt of {len(prompt)} tokens and {len(requests)} replies need {needed} tokens; "
            f"the context holds {llama.n_ctx()}"
        )
    decoder = _ParallelDecoder(llama, list(prompt), requests, deadline)
    try:
        decoder.prefill(_live_prefix(llama, prompt) if reused is None else reused)
        decoder.run()
    finally:
        decoder.reset()
    return decoder.replies


def _live_prefix(llama: Any, prompt: Sequence[int]) -> int:
    live = llama.input_ids[: llama.n_tokens].tolist()
    shared = 0
    for a, b in zip(live, prompt, strict=False):
        if a != b:
            break
        shared += 1
    return shared


class _ParallelDecoder:
    """The state of one :func:`decode_parallel` call."""

    def __init__(
        self,
        llama: Any,
        prompt: list[int],
        requests: Sequence[SequenceRequest],
        deadline: float | None,
    ) -> None:
        import llama_cpp

        self._lib = llama_cpp
        self.llama, self.prompt, self.requests, self.deadline = llama, prompt, requests, deadline
        self.replies = [SequenceReply() for _ in requests]
        self._rngs = [np.random.default_rng(r.seed) for r in requests]
        self._vocab = llama_cpp.llama_model_get_vocab(llama._model.model)
        self._n_vocab = llama.n_vocab()
        size = max(len(requests), sum(len(r.suffix) for r in requests), 1)
        self._batch = llama_cpp.llama_batch_init(size, 0, 1)
        self._positions = [len(prompt)] * len(requests)  # where each sequence's next token goes

    # ----------------------------------------------------------------- steps
    def prefill(self, reused: int) -> None:
        """The prompt into sequence 0 (from ``reused`` on) and into every other sequence."""
        llama, ctx = self.llama, self.llama._ctx
        for seq in range(1, sequence_capacity(llama)):
            ctx.kv_cache_seq_rm(seq, -1, -1)
        llama.n_tokens = max(0, min(reused, len(self.prompt) - 1))
        llama.eval(self.prompt[llama.n_tokens :])
        shared_logits = self._logits(-1).copy()
        for seq in range(1, len(self.requests)):
            ctx.kv_cache_seq_cp(0, seq, 0, len(self.prompt))
        entries = [
            (seq, token) for seq, request in enumerate(self.requests) for token in request.suffix
        ]
        outputs = self._decode(entries) if entries else {}
        for seq, request in enumerate(self.requests):
            logits = outputs[seq] if request.suffix else shared_logits
            self._accept(seq, logits)

    def run(self) -> None:
        """Decode until every reply has finished."""
        while True:
            active = [seq for seq, r in enumerate(self.replies) if r.finish_reason is None]
            if not active:
                return
            if self.deadline is not None and time.perf_counter() > self.deadline:
                raise LLMTimeoutError(
                    f"llama.cpp: {len(active)} of {len(self.replies)} replies unfinished "
                    "at the timeout"
                )
            raise_if_cancelled(f"llama.cpp: decoding {len(active)} replies")
            outputs = self._decode([(seq, self.replies[seq].tokens[-1]) for seq in active])
            for seq in active:
                self._accept(seq, outputs[seq])

    def reset(self) -> None:
        """Leave the prompt alone in sequence 0 and free the batch."""
        ctx = self.llama._ctx
        for seq in range(1, len(self.requests)):
            ctx.kv_cache_seq_rm(seq, -1, -1)
        ctx.kv_cache_seq_rm(0, len(self.prompt), -1)
        self.llama.n_tokens = min(self.llama.n_tokens, len(self.prompt))
        if self._batch is not None:
            self._lib.llama_batch_free(self._batch)
            self._batch = None

    # --------------------------------------------------------------- helpers
    def _decode(self, entries: list[tuple[int, int]]) -> dict[int, np.ndarray]:
        """Evaluate (sequence, token) pairs in one batch; each sequence's last logits."""
        batch, last = self._batch, {}
        batch.n_tokens = len(entries)
        for i, (seq, token) in enumerate(entries):
            batch.token[i] = token
            batch.pos[i] = self._positions[seq]
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = seq
            batch.logits[i] = False
            self._positions[seq] += 1
            last[seq] = i
        for i in last.values():
            batch.logits[i] = True
        code = self._lib.llama_decode(self.llama._ctx.ctx, batch)
        if code != 0:
            raise LLMError(f"llama.cpp: parallel decoding failed (llama_decode returned {code})")
        return {seq: self._logits(i) for seq, i in last.items()}

    def _logits(self, index: int) -> np.ndarray:
        pointer = self.llama._ctx.get_logits_ith(index)
        return np.ctypeslib.as_array(pointer, shape=(self._n_vocab,))

    def _accept(self, seq: int, logits: np.ndarray) -> None:
        """Sample sequence ``seq``'s next token and see whether its reply is over."""
        request, reply = self.requests[seq], self.replies[seq]
        token = sample_token(logits, request.temperature, self._rngs[seq])
        if self._lib.llama_vocab_is_eog(self._vocab, token):
            reply.finish_reason = "stop"
            return
        reply.tokens.append(token)
        reply.logprobs.append(token_logprob(logits, token))
        text = self.llama.detokenize(reply.tokens).decode("utf-8", errors="ignore")
        cuts = [text.find(s) for s in request.stop if s and s in text]
        if cuts:
            reply.text, reply.finish_reason = text[: min(cuts)], "stop"
            return
        reply.text = text
        if len(reply.tokens) >= request.max_tokens:
            reply.finish_reason = "length"


def sample_token(logits: np.ndarray, temperature: float, rng: np.random.Generator) -> int:
    """Greedy at temperature 0; otherwise top-k, top-p and min-p on the plain distribution,
    then the temperature, as llama.cpp's default sampler chain does."""
    if temperature <= 0:
        return int(np.argmax(logits))
    k = min(TOP_K, logits.shape[0])
    top = np.argpartition(-logits, k - 1)[:k]
    top = top[np.argsort(-logits[top], kind="stable")]
    values = logits[top].astype(np.float64)
    probs = np.exp(values - values[0])
    probs /= probs.sum()
    keep = int(np.searchsorted(np.cumsum(probs), TOP_P) + 1)  # smallest set covering top_p
    keep = max(1, min(keep, int(np.sum(probs >= MIN_P * probs[0]))))
    scaled = values[:keep] / temperature
    weights = np.exp(scaled - scaled.max())
    return int(top[rng.choice(keep, p=weights / weights.sum())])
