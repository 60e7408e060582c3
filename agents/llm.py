"""One LLM interface, two backends, and the wrappers every caller wants.

``LLM.chat(messages, n, temperature, max_tokens, stop, json_schema, timeout, seed, reply_prefix)
-> ChatResult``.

- :class:`LlamaCppLLM`: in-process llama.cpp over a GGUF file (the embedded default; see
  :mod:`agents.models`). One generation at a time per model (llama.cpp contexts are not
  thread-safe); ``timeout`` is enforced between streamed tokens.
- :class:`OpenAICompatibleLLM`: any OpenAI-compatible server (vLLM, llama.cpp server, Ollama,
  hosted APIs) through the ``openai`` client.
- :class:`ResilientLLM`: retries with exponential backoff, a concurrency limit, and a bounded
  wait for a slot (callers get :class:`LLMBusyError` instead of queueing forever).

With ``json_schema`` the reply must parse as JSON: malformed replies are retried once and then
raise :class:`LLMOutputError` carrying the raw text.

With ``reply_prefix`` the reply starts with that text and the model writes only what follows
(``stop`` applies to that part); the returned text includes the prefix. llama.cpp continues
the started reply itself; an OpenAI-compatible server does when it is marked ``prefill=True``
(llama.cpp server, vLLM, Ollama continue a trailing assistant message); otherwise the model
answers freely and :func:`continue_reply` keeps the reply from the prefix on, cut at the first
stop after it. The SQL-gen agent starts replies with an open ```sql fence and stops at the
closing one, so a small model cannot wander into long explanations before or after the query.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

log = logging.getLogger(__name__)
Message = dict[str, str]


class LLMError(RuntimeError):
    """The model could not answer (backend failure)."""


class LLMTimeoutError(LLMError):
    """The answer took longer than the timeout."""


class LLMOutputError(LLMError):
    """The answer is not what was asked for (e.g. not JSON); ``raw`` holds it."""

    def __init__(self, message: str, raw: str) -> None:
        super().__init__(message)
        self.raw = raw


class LLMBusyError(LLMError):
    """Every slot stayed taken for the whole wait: the caller should answer 429/503."""


@dataclass(frozen=True)
class Completion:
    text: str
    finish_reason: str | None = None

    def json(self) -> Any:
        """The text parsed as JSON (code fences tolerated); :class:`LLMOutputError` if not."""
        text = self.text.strip().removeprefix("```json").removeprefix("```").removesuffix("```")
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise LLMOutputError(f"model output is not JSON: {exc.msg}", self.text) from None


@dataclass
class ChatResult:
    completions: list[Completion]
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return self.completions[0].text


class LLM(Protocol):
    name: str

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
    ) -> ChatResult: ...


def check_json(result: ChatResult) -> ChatResult:
    for completion in result.completions:
        completion.json()
    return result


def continue_reply(prefix: str, reply: str, stop: Sequence[str] | None) -> str:
    """A freely written ``reply`` as if it had been started with ``prefix``.

    From the prefix's first occurrence on, cut at the first ``stop`` after it; a reply that
    never writes the prefix is returned whole (cutting it at a stop could cut its answer).
    """
    start = reply.find(prefix)
    if start < 0:
        return reply
    rest = reply[start + len(prefix) :]
    cuts = [rest.find(s) for s in stop or () if s and s in rest]
    return prefix + (rest[: min(cuts)] if cuts else rest)


class LlamaCppLLM:
    """llama.cpp in-process over ``model_path`` (a GGUF file).

    Args:
        model_path: The GGUF file.
        n_ctx: Context window in tokens.
        n_threads: CPU threads (default: llama.cpp's choice).
        seed: Sampling seed; sample ``i`` of a call uses ``seed + i``.
    """

    def __init__(
        self, model_path: str, *, n_ctx: int = 4096, n_threads: int | None = None, seed: int = 0
    ) -> None:
        from llama_cpp import Llama

        self.name = f"llama.cpp:{model_path.rsplit('/', 1)[-1]}"
        self.seed = seed
        self._llama = Llama(
            model_path=model_path, n_ctx=n_ctx, n_threads=n_threads, seed=seed, verbose=False
        )
        self._template = _chat_template(self._llama)
        self._lock = threading.Lock()

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
        prefill = bool(reply_prefix) and fmt is None and self._template is not None
        with self._lock:
            for sample in range(n):
                options = _Sampling(temperature, max_tokens, base_seed + sample, deadline)
                try:
                    if prefill:
                        assert reply_prefix is not None
                        text, finish = self._continue(messages, reply_prefix, stop, options, result)
                    else:
                        text, finish = self._answer(messages, stop, fmt, options, result)
                except ValueError as exc:  # llama.cpp: "Requested tokens (N) exceed context window"
                    raise LLMError(f"{self.name}: {exc}") from exc
                if reply_prefix and not prefill and fmt is None:
                    text = continue_reply(reply_prefix, text, stop)
                result.completions.append(Completion(text, finish))
        result.latency_s = time.perf_counter() - started
        return check_json(result) if json_schema else result

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
        messages: Sequence[Message],
        prefix: str,
        stop: Sequence[str] | None,
        options: _Sampling,
        result: ChatResult,
    ) -> tuple[str, str | None]:
        """A reply that starts with ``prefix``: the chat template, then the prefix, continued."""
        assert self._template is not None
        formatted = self._template(messages=list(messages))
        tokens = self._llama.tokenize(
            formatted.prompt.encode("utf-8"), add_bos=not formatted.added_special, special=True
        )
        tokens += self._llama.tokenize(prefix.encode("utf-8"), add_bos=False, special=False)
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
        for chunk in stream:
            choice = chunk["choices"][0]
            parts.append(piece(choice) or "")
            finish = choice.get("finish_reason") or finish
            if options.deadline is not None and time.perf_counter() > options.deadline:
                raise LLMTimeoutError(f"{self.name}: no answer within the timeout")
        return "".join(parts), len(parts), finish


@dataclass(frozen=True)
class _Sampling:
    temperature: float
    max_tokens: int
    seed: int
    deadline: float | None


def _chat_template(llama: Any) -> Any:
    """The GGUF's own chat template as a formatter, or None (llama.cpp's default format)."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    template = llama.metadata.get("tokenizer.chat_template")
    if not template:
        return None
    eos, bos = llama.token_eos(), llama.token_bos()

    def text(token: int) -> str:
        if token < 0:
            return ""
        return llama.detokenize([token], special=True).decode("utf-8", errors="replace")

    return Jinja2ChatFormatter(template, text(eos), text(bos), stop_token_ids=[eos])


class OpenAICompatibleLLM:
    """An OpenAI-compatible chat endpoint (vLLM, llama.cpp server, Ollama, hosted APIs).

    Args:
        base_url: The endpoint, e.g. ``http://localhost:8000/v1``.
        model: The served model's name.
        api_key: The endpoint's key, when it wants one.
        timeout: Seconds per request unless a call gives its own.
        prefill: The server continues a trailing assistant message (llama.cpp server, vLLM,
            Ollama): ``reply_prefix`` is sent as that message. Otherwise the model answers
            freely and :func:`continue_reply` trims its reply.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "not-needed",
        *,
        timeout: float = 60.0,
        prefill: bool = False,
    ) -> None:
        from openai import OpenAI

        self.name = f"openai:{model}@{base_url}"
        self.model, self.prefill = model, prefill
        self._client = OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0)

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
        import openai

        started = time.perf_counter()
        extra: dict[str, Any] = {}
        if json_schema:
            extra["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": json_schema},
            }
            reply_prefix = None
        prefill = bool(reply_prefix) and self.prefill
        sent = list(messages)
        if prefill:
            sent.append({"role": "assistant", "content": str(reply_prefix)})
            # vLLM continues the last message only when asked; other servers ignore the keys
            extra["extra_body"] = {"continue_final_message": True, "add_generation_prompt": False}
        try:
            reply = self._client.chat.completions.create(
                model=self.model,
                messages=sent,  # type: ignore[arg-type]
                n=n,
                temperature=temperature,
                max_tokens=max_tokens,
                stop=list(stop) if stop and (prefill or not reply_prefix) else None,
                timeout=timeout,
                seed=seed,
                **extra,
            )
        except openai.APITimeoutError as exc:
            raise LLMTimeoutError(f"{self.name}: {exc}") from exc
        except openai.OpenAIError as exc:
            raise LLMError(f"{self.name}: {exc}") from exc
        except ValueError as exc:  # a body that is not JSON at all
            raise LLMOutputError(f"{self.name}: unreadable reply: {exc}", str(exc)) from exc
        if not getattr(reply, "choices", None):
            raise LLMOutputError(f"{self.name}: reply without choices", str(reply))
        texts = [c.message.content or "" for c in reply.choices]
        if prefill:
            texts = [_after_prefix(str(reply_prefix), text) for text in texts]
        elif reply_prefix:
            texts = [continue_reply(reply_prefix, text, stop) for text in texts]
        result = ChatResult(
            completions=[
                Completion(text, choice.finish_reason)
                for text, choice in zip(texts, reply.choices, strict=True)
            ],
            model=self.name,
            prompt_tokens=getattr(reply.usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(reply.usage, "completion_tokens", 0) or 0,
            latency_s=time.perf_counter() - started,
        )
        return check_json(result) if json_schema else result


def _after_prefix(prefix: str, continuation: str) -> str:
    """The whole reply: servers return the continuation, some repeat the prefix first."""
    return continuation if continuation.startswith(prefix) else prefix + continuation


class ResilientLLM:
    """Retries, backoff and a concurrency limit around any :class:`LLM`.

    Args:
        inner: The backend.
        retries: Extra attempts after a failure (timeouts and malformed JSON included).
        backoff_s: First wait between attempts; doubles each time.
        max_concurrency: Calls running at once.
        max_wait_s: How long a call waits for a slot before :class:`LLMBusyError`.
    """

    def __init__(
        self,
        inner: LLM,
        *,
        retries: int = 2,
        backoff_s: float = 0.5,
        max_concurrency: int = 1,
        max_wait_s: float = 30.0,
    ) -> None:
        self.inner, self.name = inner, inner.name
        self.retries, self.backoff_s, self.max_wait_s = retries, backoff_s, max_wait_s
        self._slots = threading.BoundedSemaphore(max_concurrency)

    def chat(self, messages: Sequence[Message], **options: Any) -> ChatResult:
        if not self._slots.acquire(timeout=self.max_wait_s):
            raise LLMBusyError(f"{self.name}: all slots busy for {self.max_wait_s:g} s")
        try:
            for attempt in range(self.retries + 1):
                try:
                    return self.inner.chat(messages, **options)
                except LLMError as exc:
                    if attempt == self.retries:
                        raise
                    wait = self.backoff_s * 2**attempt
                    log.warning(
                        "%s failed (%s); retry %d in %.1f s", self.name, exc, attempt + 1, wait
                    )
                    time.sleep(wait)
            raise AssertionError("unreachable")
        finally:
            self._slots.release()
