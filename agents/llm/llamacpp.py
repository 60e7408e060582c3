"""The embedded backend: llama.cpp in-process over a GGUF file (see :mod:`agents.llm.models`).

One generation at a time per model (llama.cpp contexts are not thread-safe); ``timeout`` is
enforced between streamed tokens and inside a prompt's prefill (below), so a long prompt on a
busy machine cannot hold the model for minutes past it. A ``reply_prefix`` is continued for
real: the GGUF's own chat template is rendered with the assistant turn opened, the prefix
appended, and the model completes it (the prompt cache still reuses the longest shared prefix
of tokens).

With a :class:`agents.llm.prompt_cache.PromptStateCache`, the context state after a call is
kept on disk and restored before a later prompt that starts the same way, in this process or
the next one: a schema prefilled once is not prefilled again.

With ``parallel_sequences`` > 1 the context holds that many sequences, and ``chat_variants``
(see :mod:`agents.llm.variants`) decodes a greedy reply and samples of one prompt together,
for little more than the time of one (:mod:`agents.llm.parallel_decode`).

A call stops within about a second once the current :class:`~agents.llm.base.Cancellation`
is cancelled: while it waits for the model (another caller may hold it for a minute), while
it generates (the token is looked at before each new token), and while it prefills: under a
token or with a timeout, a prompt is evaluated with llama.cpp's abort callback installed, which
llama.cpp calls after each node of the compute graph (a few hundred per batch; each call takes
the GIL, so the callback is installed only for a prefill that can be cancelled or time out);
past the deadline the call raises :class:`~agents.llm.base.LLMTimeoutError`. llama.cpp drops
the aborted batch from the KV cache and llama-cpp-python records only the batches it
finished, so the next call reuses that prefix as usual and answers exactly as if nothing had
been cancelled.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agents.llm.base import (
    ChatResult,
    Completion,
    LLMError,
    LLMTimeoutError,
    Message,
    acquire_cancellable,
    check_json,
    continue_reply,
    current_cancellation,
    raise_if_cancelled,
)
from agents.llm.llamacpp_load import load_llama
from agents.llm.llamacpp_process import (
    aborted_by,
    chat_template,
    keep_process_output,
    raise_if_late,
)
from agents.llm.logprobs import TokenLogprobs
from agents.llm.parallel_decode import (
    SequenceRequest,
    decode_parallel,
    multi_sequence_context,
    sequence_capacity,
)
from agents.llm.prompt_cache import PromptStateCache, shared_prefix
from agents.llm.variants import Variant

log = logging.getLogger(__name__)


class LlamaCppLLM:
    """llama.cpp in-process over ``model_path`` (a GGUF file).

    Args:
        model_path: The GGUF file.
        n_ctx: Context window in tokens.
        n_threads: CPU threads (default: llama.cpp's choice).
        seed: Sampling seed; sample ``i`` of a call uses ``seed + i``.
        prompt_cache: Context states kept across calls and processes (default: none).
        parallel_sequences: Replies ``chat_variants`` decodes together (1: one at a time).
        weight_repack: llama.cpp's extra weight buffers (AMX, CPU repack); None: on unless
            the build has AMX, whose products can crash (:mod:`agents.llm.llamacpp_load`).
    """

    def __init__(
        self,
        model_path: str,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        seed: int = 0,
        prompt_cache: PromptStateCache | None = None,
        parallel_sequences: int = 1,
        weight_repack: bool | None = None,
    ) -> None:
        keep_process_output()
        self.name = f"llama.cpp:{model_path.rsplit('/', 1)[-1]}"
        self.seed = seed
        options = {"n_ctx": n_ctx, "n_threads": n_threads, "seed": seed, "verbose": False}
        self._llama = load_llama(model_path, weight_repack=weight_repack, **options)
        if parallel_sequences > 1:
            multi_sequence_context(self._llama, parallel_sequences)
        self._eval_whole = self._llama.eval
        self._llama.eval = self._eval_cancellable  # llama-cpp-python's generate calls self.eval
        self._template = chat_template(self._llama)
        self._lock = threading.Lock()
        self._logprobs: TokenLogprobs | None = None  # the generation under way, if any
        self._deadline: float | None = None  # the call under way's, if it has a timeout
        self.prompt_cache = prompt_cache
        self.parallel_sequences = sequence_capacity(self._llama)
        self.variants_together = self._template is not None and self.parallel_sequences > 1

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
        base_seed = self.seed if seed is None else seed
        deadline = started + timeout if timeout else None
        result = ChatResult(completions=[], model=self.name)
        fmt = {"type": "json_object", "schema": json_schema} if json_schema else None
        prefix = reply_prefix if fmt is None else None
        prefill = bool(prefix) and self._template is not None
        templated = None  # (tokens, template output): rendered once for every sample
        if self._template is not None and (prefill or self.prompt_cache is not None):
            templated = self._templated(messages, prefix if prefill else None)
        prompt = templated[0] if templated and self.prompt_cache is not None else []
        with self._model_held(deadline):
            for sample in range(n):
                options = _Sampling(temperature, max_tokens, base_seed + sample, deadline)
                reused = self._restore(prompt)
                self._logprobs = sink = TokenLogprobs(self._last_logits)
                try:
                    if prefix and prefill:
                        assert templated is not None
                        text, finish = self._continue(templated, prefix, stop, options, result)
                    elif prefix:  # no chat template to continue: answer freely, then trim
                        text, finish = self._answer(messages, None, fmt, options, result)
                        text = continue_reply(prefix, text, stop)
                    else:
                        text, finish = self._answer(messages, stop, fmt, options, result)
                except ValueError as exc:  # llama.cpp: "Requested tokens (N) exceed context window"
                    raise LLMError(f"{self.name}: {exc}") from exc
                finally:
                    self._logprobs = None
                self._store(prompt, reused)
                result.completions.append(Completion(text, finish, sink.result()))
        result.latency_s = time.perf_counter() - started
        return check_json(result) if json_schema else result

    def chat_variants(
        self,
        messages: Sequence[Message],
        variants: Sequence[Variant],
        *,
        max_tokens: int = 512,
        timeout: float | None = None,
    ) -> list[ChatResult]:
        """One reply per variant, decoded together (one at a time past the context's
        sequences, or without a chat template)."""
        capacity = sequence_capacity(self._llama) if self._template is not None else 1
        if len(variants) < 2 or capacity < 2:
            return [
                self.chat(messages, max_tokens=max_tokens, timeout=timeout, **v.chat_options())
                for v in variants
            ]
        replies: list[ChatResult] = []
        for start in range(0, len(variants), capacity):
            replies += self._decoded_together(
                messages, variants[start : start + capacity], max_tokens, timeout
            )
        return replies

    def _decoded_together(
        self,
        messages: Sequence[Message],
        variants: Sequence[Variant],
        max_tokens: int,
        timeout: float | None,
    ) -> list[ChatResult]:
        started = time.perf_counter()
        deadline = started + timeout if timeout else None
        prompt, formatted = self._templated(messages, None)
        template_stop = formatted.stop or []
        template_stop = [template_stop] if isinstance(template_stop, str) else list(template_stop)
        requests = [
            SequenceRequest(
                suffix=tuple(self._suffix(v.reply_prefix)),
                temperature=v.temperature,
                seed=v.seed,
                max_tokens=max_tokens,
                stop=(*v.stop, *template_stop),
            )
            for v in variants
        ]
        with self._model_held(deadline):
            reused = self._restore(prompt) if self.prompt_cache is not None else None
            try:
                replies = decode_parallel(
                    self._llama, prompt, requests, reused=reused, deadline=deadline
                )
            except ValueError as exc:  # llama.cpp refused the prompt
                raise LLMError(f"{self.name}: {exc}") from exc
            self._store(prompt, reused or 0)
        latency = time.perf_counter() - started
        return [
            ChatResult(
                completions=[
                    Completion(
                        (v.reply_prefix or "") + r.text,
                        r.finish_reason,
                        tuple(r.logprobs) if r.logprobs else None,
                    )
                ],
                model=self.name,
                prompt_tokens=len(prompt) + len(q.suffix),
                completion_tokens=len(r.tokens),
                latency_s=latency,
                metadata={"decoded_together": len(variants)},
            )
            for v, q, r in zip(variants, requests, replies, strict=True)
        ]

    @contextlib.contextmanager
    def _model_held(self, deadline: float | None = None) -> Iterator[None]:
        """The model to this call alone; the wait ends when the call is cancelled. While it
        is held, ``deadline`` (``time.perf_counter``) bounds the call's prefills."""
        acquire_cancellable(self._lock, f"{self.name}: waiting for the model")
        self._deadline = deadline
        try:
            yield
        finally:
            self._deadline = None
            self._lock.release()

    def _eval_cancellable(self, tokens: Sequence[int]) -> None:
        """``Llama.eval``, aborted inside llama.cpp when the current token is cancelled
        (:class:`LLMCancelledError`) or the call's deadline passes (:class:`LLMTimeoutError`)
        while it evaluates a prompt. llama-cpp-python updates ``n_tokens`` and ``input_ids``
        only after a batch it finished, and llama.cpp removes an aborted batch from the KV
        cache, so the context stays consistent.

        During a ``chat`` generation ``tokens`` are first shown to its :class:`TokenLogprobs`
        (a generated token's log probability is read from the logits it was drawn from)."""
        if self._logprobs is not None:
            self._logprobs.before_eval(tokens)
        token, deadline = current_cancellation(), self._deadline
        if token is not None:
            token.raise_if_cancelled(f"{self.name}: evaluating")
        # a generated token: looked at between tokens is soon enough
        if len(tokens) < 2 or (token is None and deadline is None):
            self._eval_whole(tokens)
            return
        raise_if_late(self.name, deadline, len(tokens))
        with aborted_by(self._llama, token, deadline):
            try:
                self._eval_whole(tokens)
            except RuntimeError:  # "llama_decode returned 2": aborted
                if token is not None:
                    token.raise_if_cancelled(f"{self.name}: prefill of {len(tokens)} tokens")
                raise_if_late(self.name, deadline, len(tokens))
                raise

    def _last_logits(self) -> Any:
        """The logits of the context's last evaluated token (a view, not a copy)."""
        pointer = self._llama._ctx.get_logits_ith(-1)
        return np.ctypeslib.as_array(pointer, shape=(self._llama.n_vocab(),))

    def _suffix(self, reply_prefix: str | None) -> list[int]:
        if not reply_prefix:
            return []
        return self._llama.tokenize(reply_prefix.encode("utf-8"), add_bos=False, special=False)

    def _templated(self, messages: Sequence[Message], prefix: str | None) -> tuple[list[int], Any]:
        """(tokens, the template's output) of ``messages`` with the assistant turn opened (and
        ``prefix``): what llama.cpp evaluates, as its own chat handler renders it."""
        assert self._template is not None
        formatted = self._template(messages=list(messages))
        tokens = self._llama.tokenize(
            formatted.prompt.encode("utf-8"), add_bos=not formatted.added_special, special=True
        )
        return tokens + self._suffix(prefix), formatted

    def _restore(self, prompt: list[int]) -> int:
        """Prompt tokens already in the context, after restoring a stored state if one is better."""
        if not prompt or self.prompt_cache is None:
            return 0
        live = min(
            shared_prefix(self._llama.input_ids[: self._llama.n_tokens], prompt), len(prompt) - 1
        )
        found = self.prompt_cache.best(prompt, live)
        if found is not None and self.prompt_cache.restore(self._llama, *found):
            return found[1]
        return live

    def _store(self, prompt: list[int], reused: int) -> None:
        """Keep the context when this call prefilled enough of ``prompt`` to be worth it."""
        if self.prompt_cache is None or len(prompt) - reused < self.prompt_cache.min_new:
            return
        try:
            self.prompt_cache.store(self._llama)
        except OSError as exc:  # a full or read-only disk costs speed, never the answer
            log.warning("%s: prompt state not stored: %s", self.name, exc)

    def _answer(
        self,
        messages: Sequence[Message],
        stop: Sequence[str] | None,
        fmt: dict[str, Any] | None,
        options: _Sampling,
        result: ChatResult,
    ) -> tuple[str, str | None]:
        """A reply through llama.cpp's own chat handler."""
        stream = self._llama.create_chat_completion(
            messages=list(messages),
            temperature=options.temperature,
            max_tokens=options.max_tokens,
            stop=list(stop or []),
            response_format=fmt,
            seed=options.seed,
            stream=True,
        )
        text, tokens, finish = self._drain(
            stream, lambda choice: choice["delta"].get("content"), options
        )
        result.completion_tokens += tokens
        result.prompt_tokens += len(
            self._llama.tokenize("".join(m["content"] for m in messages).encode("utf-8"))
        )
        return text, finish

    def _continue(
        self,
        templated: tuple[list[int], Any],
        prefix: str,
        stop: Sequence[str] | None,
        options: _Sampling,
        result: ChatResult,
    ) -> tuple[str, str | None]:
        """A reply that starts with ``prefix``: the chat template, then the prefix, continued."""
        tokens, formatted = templated
        stream = self._llama.create_completion(
            prompt=tokens,
            temperature=options.temperature,
            max_tokens=options.max_tokens,
            stop=[*(stop or []), *(formatted.stop or [])],
            stopping_criteria=formatted.stopping_criteria,
            top_p=0.95,
            top_k=40,
            min_p=0.05,
            repeat_penalty=1.0,
            seed=options.seed,
            stream=True,
        )
        text, generated, finish = self._drain(stream, lambda choice: choice.get("text"), options)
        result.completion_tokens += generated
        result.prompt_tokens += len(tokens)
        return prefix + text, finish

    def _drain(
        self, stream: Any, piece: Callable[[dict[str, Any]], str | None], options: _Sampling
    ) -> tuple[str, int, str | None]:
        """(text, tokens, finish reason) of a streamed completion, within the deadline."""
        parts: list[str] = []
        finish = None
        try:
            for chunk in stream:
                choice = chunk["choices"][0]
                parts.append(piece(choice) or "")
                finish = choice.get("finish_reason") or finish
                if options.deadline is not None and time.perf_counter() > options.deadline:
                    raise LLMTimeoutError(f"{self.name}: no answer within the timeout")
                raise_if_cancelled(f"{self.name}: generating")
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()  # a stream left early ends now, not when collected
        return "".join(parts), len(parts), finish


@dataclass(frozen=True)
class _Sampling:
    temperature: float
    max_tokens: int
    seed: int
    deadline: float | None
