"""The OpenAI-compatible backend: vLLM, llama.cpp server, Ollama and hosted APIs.

It speaks the chat-completions protocol through the ``openai`` client; see
:mod:`agents.llm.base` for the interface and the reply-prefix rules.

Replies are not streamed (not every server streams ``n`` > 1 or JSON-schema answers). Under a
:class:`~agents.llm.base.Cancellation` the request runs in a thread of its own and the call
stops waiting for it as soon as the token is cancelled; the abandoned request ends when the
server answers or at its timeout, and its reply is dropped.

Each reply carries the log probability of every token the server generated
(``logprobs=True``; with a reply prefix answered freely, of the whole free reply). A server
that refuses the parameter (a 400 naming it) is asked again without it, and this instance
does not ask it again; its replies, like those of a server that ignores it, carry None.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from agents.llm.base import (
    Cancellation,
    ChatResult,
    Completion,
    LLMError,
    LLMOutputError,
    LLMTimeoutError,
    Message,
    check_json,
    continue_reply,
    current_cancellation,
)

log = logging.getLogger(__name__)


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
        self.ask_logprobs = True  # false once the server refused the parameter
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
        request = {
            "model": self.model,
            "messages": sent,
            "n": n,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "stop": list(stop) if stop and (prefill or not reply_prefix) else None,
            "timeout": timeout,
            "seed": seed,
            **extra,
        }
        try:
            reply = self._create(request)
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
                Completion(text, choice.finish_reason, _logprobs(choice))
                for text, choice in zip(texts, reply.choices, strict=True)
            ],
            model=self.name,
            prompt_tokens=getattr(reply.usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(reply.usage, "completion_tokens", 0) or 0,
            latency_s=time.perf_counter() - started,
        )
        return check_json(result) if json_schema else result

    def _create(self, request: dict[str, Any]) -> Any:
        """The chat completion, with token log probabilities while the server takes them."""
        import openai

        if not self.ask_logprobs:
            return self._cancellable(lambda: self._client.chat.completions.create(**request))
        try:
            return self._cancellable(
                lambda: self._client.chat.completions.create(**request, logprobs=True)
            )
        except openai.BadRequestError as exc:
            if "logprobs" not in str(exc).lower():
                raise
            log.info("%s refuses logprobs (%s); asking without them", self.name, exc)
            self.ask_logprobs = False
            return self._cancellable(lambda: self._client.chat.completions.create(**request))

    def _cancellable(self, request: Callable[[], Any]) -> Any:
        """``request()``, here when no cancellation is current; otherwise in a thread of its
        own, waited for until it ends or the token is cancelled (:class:`LLMCancelledError`)."""
        token = current_cancellation()
        if token is None:
            return request()
        token.raise_if_cancelled(self.name)
        outcome: dict[str, Any] = {}
        done = threading.Event()

        def run() -> None:
            try:
                outcome["reply"] = request()
            except BaseException as exc:  # handed to the waiting caller
                outcome["error"] = exc
            finally:
                done.set()

        threading.Thread(target=run, name="almanac-llm-request", daemon=True).start()
        while not done.wait(Cancellation.CHECK_EVERY_S):
            token.raise_if_cancelled(f"{self.name}: waiting for the reply")
        if "error" in outcome:
            raise outcome["error"]
        return outcome["reply"]


def _logprobs(choice: Any) -> tuple[float, ...] | None:
    """The log probabilities of a choice's tokens, when the server sent them."""
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if not content:
        return None
    values: list[Any] = [getattr(token, "logprob", None) for token in content]
    if any(value is None for value in values):
        return None
    return tuple(float(value) for value in values)


def _after_prefix(prefix: str, continuation: str) -> str:
    """The whole reply: servers return the continuation, some repeat the prefix first."""
    return continuation if continuation.startswith(prefix) else prefix + continuation
