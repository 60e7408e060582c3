"""One LLM interface, two backends, and the wrappers every caller wants.

``LLM.chat(messages, n, temperature, max_tokens, stop, json_schema, timeout, seed) -> ChatResult``.

- :class:`LlamaCppLLM`: in-process llama.cpp over a GGUF file (the embedded default; see
  :mod:`agents.models`). One generation at a time per model (llama.cpp contexts are not
  thread-safe); ``timeout`` is enforced between streamed tokens.
- :class:`OpenAICompatibleLLM`: any OpenAI-compatible server (vLLM, llama.cpp server, Ollama,
  hosted APIs) through the ``openai`` client.
- :class:`ResilientLLM`: retries with exponential backoff, a concurrency limit, and a bounded
  wait for a slot (callers get :class:`LLMBusyError` instead of queueing forever).

With ``json_schema`` the reply must parse as JSON: malformed replies are retried once and then
raise :class:`LLMOutputError` carrying the raw text.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Sequence
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
    ) -> ChatResult: ...


def check_json(result: ChatResult) -> ChatResult:
    for completion in result.completions:
        completion.json()
    return result


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
    ) -> ChatResult:
        started = time.perf_counter()
        base_seed = self.seed if seed is None else seed
        deadline = started + timeout if timeout else None
        result = ChatResult(completions=[], model=self.name)
        fmt = {"type": "json_object", "schema": json_schema} if json_schema else None
        with self._lock:
            for sample in range(n):
                text, finish = self._guarded_stream(
                    messages,
                    temperature,
                    max_tokens,
                    stop,
                    fmt,
                    base_seed + sample,
                    deadline,
                    result,
                )
                result.completions.append(Completion(text, finish))
        result.latency_s = time.perf_counter() - started
        return check_json(result) if json_schema else result

    def _guarded_stream(self, *args: Any) -> tuple[str, str | None]:
        try:
            return self._stream(*args)
        except ValueError as exc:  # llama.cpp: "Requested tokens (N) exceed context window"
            raise LLMError(f"{self.name}: {exc}") from exc

    def _stream(
        self,
        messages: Sequence[Message],
        temperature: float,
        max_tokens: int,
        stop: Sequence[str] | None,
        fmt: dict[str, Any] | None,
        seed: int,
        deadline: float | None,
        result: ChatResult,
    ) -> tuple[str, str | None]:
        parts: list[str] = []
        finish = None
        stream = self._llama.create_chat_completion(
            messages=list(messages),
            temperature=temperature,
            max_tokens=max_tokens,
            stop=list(stop or []),
            response_format=fmt,
            seed=seed,
            stream=True,
        )
        for chunk in stream:
            choice = chunk["choices"][0]
            parts.append(choice["delta"].get("content") or "")
            finish = choice.get("finish_reason") or finish
            result.completion_tokens += 1
            if deadline is not None and time.perf_counter() > deadline:
                raise LLMTimeoutError(f"{self.name}: no answer within the timeout")
        result.prompt_tokens += len(
            self._llama.tokenize("".join(m["content"] for m in messages).encode("utf-8"))
        )
        return "".join(parts), finish


class OpenAICompatibleLLM:
    """An OpenAI-compatible chat endpoint (vLLM, llama.cpp server, Ollama, hosted APIs)."""

    def __init__(
        self, base_url: str, model: str, api_key: str = "not-needed", *, timeout: float = 60.0
    ) -> None:
        from openai import OpenAI

        self.name = f"openai:{model}@{base_url}"
        self.model = model
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
    ) -> ChatResult:
        import openai

        started = time.perf_counter()
        extra: dict[str, Any] = {}
        if json_schema:
            extra["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": json_schema},
            }
        try:
            reply = self._client.chat.completions.create(
                model=self.model,
                messages=list(messages),
                n=n,
                temperature=temperature,
                max_tokens=max_tokens,
                stop=list(stop) if stop else None,
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
        result = ChatResult(
            completions=[
                Completion(c.message.content or "", c.finish_reason) for c in reply.choices
            ],
            model=self.name,
            prompt_tokens=getattr(reply.usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(reply.usage, "completion_tokens", 0) or 0,
            latency_s=time.perf_counter() - started,
        )
        return check_json(result) if json_schema else result


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
