"""One LLM interface, two backends, and the wrappers every caller wants.

``LLM.chat(messages, n, temperature, max_tokens, stop, json_schema, timeout, seed, reply_prefix)
-> ChatResult``.

- :class:`agents.llm.llamacpp.LlamaCppLLM`: in-process llama.cpp over a GGUF file (the
  embedded default; see :mod:`agents.llm.models`).
- :class:`agents.llm.openai_compat.OpenAICompatibleLLM`: any OpenAI-compatible server (vLLM,
  llama.cpp server, Ollama, hosted APIs) through the ``openai`` client.
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

A call is stopped from outside by a :class:`Cancellation` made current with
:func:`cancellation_scope`: the backends and wrappers here end it within about a second with
:class:`LLMCancelledError`, whether it waits for the model, prefills, generates or sleeps
before a retry.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

log = logging.getLogger(__name__)
Message = dict[str, str]
_T = TypeVar("_T")


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


class LLMCancelledError(LLMError):
    """The call was stopped by its :class:`Cancellation`; never retried, never cached."""


class Cancellation:
    """A flag set from another thread to stop the LLM calls made on its owner's behalf.

    The owner (a job runner, a request) makes it current with :func:`cancellation_scope` and
    calls :meth:`cancel` when the work must stop; backends look at :func:`current_cancellation`
    while waiting for the model, between prefill chunks and between generated tokens.

    Why a context-local token and not a ``chat`` parameter: the calls to stop are made deep
    inside code that knows nothing of jobs (a describer built by a factory, the profiler, the
    wrappers of :mod:`agents.llm`), and every ``LLM`` implementation and caller would have to
    thread one more argument through. A context variable reaches the backend through all of
    them, and stays out of calls made by other threads (a question answered meanwhile). Work
    handed to another thread carries it only when run in a copied context
    (``contextvars.copy_context().run``).
    """

    CHECK_EVERY_S = 0.1
    """How often a wait (for the model, for a slot, before a retry) looks at the flag."""

    def __init__(
        self,
        *,
        parent: Cancellation | None = None,
        deadline: float | None = None,
        deadline_reason: str = "the deadline passed",
    ) -> None:
        """Args:
        parent: a token whose cancellation cancels this one too (a question's deadline
            inside a job that may be cancelled).
        deadline: a ``time.monotonic()`` time at which the token cancels itself.
        deadline_reason: the reason it gives then.
        """
        self._event = threading.Event()
        self._reason = ""
        self._parent, self._deadline, self._deadline_reason = parent, deadline, deadline_reason

    def cancel(self, reason: str = "cancelled") -> None:
        """Stop the calls under this token (the first reason is kept)."""
        if not self._event.is_set():
            self._reason = reason
            self._event.set()

    @property
    def cancelled(self) -> bool:
        if self._event.is_set():
            return True
        if self._parent is not None and self._parent.cancelled:
            self.cancel(self._parent.reason)
        elif self._deadline is not None and time.monotonic() >= self._deadline:
            self.cancel(self._deadline_reason)
        return self._event.is_set()

    @property
    def reason(self) -> str:
        return self._reason

    def raise_if_cancelled(self, what: str) -> None:
        """:class:`LLMCancelledError` naming ``what`` when the token is cancelled."""
        if self.cancelled:
            raise LLMCancelledError(f"{what}: {self._reason}")

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``, waking early when cancelled; whether it was cancelled."""
        if self._parent is None and self._deadline is None:
            return self._event.wait(seconds)
        end = time.monotonic() + seconds
        while not self.cancelled:
            left = end - time.monotonic()
            if left <= 0:
                return False
            self._event.wait(min(left, self.CHECK_EVERY_S))
        return True


_CURRENT: contextvars.ContextVar[Cancellation | None] = contextvars.ContextVar(
    "llm_cancellation", default=None
)


def current_cancellation() -> Cancellation | None:
    """The token of the work this thread does now, if its owner set one."""
    return _CURRENT.get()


def raise_if_cancelled(what: str) -> None:
    """:class:`LLMCancelledError` when the current token (if any) is cancelled."""
    token = _CURRENT.get()
    if token is not None:
        token.raise_if_cancelled(what)


@contextlib.contextmanager
def cancellation_scope(token: Cancellation | None) -> Iterator[Cancellation | None]:
    """Make ``token`` current for the LLM calls made inside the block (None: no token)."""
    reset = _CURRENT.set(token)
    try:
        yield token
    finally:
        _CURRENT.reset(reset)


def acquire_cancellable(lock: Any, what: str, timeout: float | None = None) -> bool:
    """Acquire ``lock`` (a lock or semaphore), looking at the current token every
    :attr:`Cancellation.CHECK_EVERY_S`: :class:`LLMCancelledError` once it is cancelled, False
    after ``timeout`` seconds (None: wait as long as it takes)."""
    token = _CURRENT.get()
    if token is None:
        return bool(lock.acquire() if timeout is None else lock.acquire(timeout=timeout))
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        token.raise_if_cancelled(what)
        step = Cancellation.CHECK_EVERY_S
        if deadline is not None:
            step = min(step, deadline - time.monotonic())
            if step <= 0:
                return False
        if lock.acquire(timeout=step):
            if token.cancelled:  # cancelled while acquiring: do not start the work
                lock.release()
                token.raise_if_cancelled(what)
            return True


@dataclass(frozen=True)
class Completion:
    """One reply. ``logprobs``: the natural-log probability the model gave each token it
    generated (as the model scored it, before temperature), when the backend reports them;
    None when it does not (a cached reply from before they were kept, a server without them)."""

    text: str
    finish_reason: str | None = None
    logprobs: tuple[float, ...] | None = None

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


class LLMWrapper:
    """What a wrapper around ``inner`` says of it: whether it decodes several replies to one
    prompt together, and how many (see :mod:`agents.llm.variants`)."""

    inner: LLM

    @property
    def variants_together(self) -> bool:
        return bool(getattr(self.inner, "variants_together", False))

    @property
    def parallel_sequences(self) -> int:
        return int(getattr(self.inner, "parallel_sequences", 1))


class ResilientLLM(LLMWrapper):
    """Retries, backoff and a concurrency limit around any :class:`LLM`.

    A cancelled call (:class:`LLMCancelledError`) is not retried; the waits for a slot and
    between attempts end as soon as the current :class:`Cancellation` is cancelled.

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
        return self._guarded(lambda: self.inner.chat(messages, **options))

    def chat_variants(
        self, messages: Sequence[Message], variants: Sequence[Any], **options: Any
    ) -> list[ChatResult]:
        """See :mod:`agents.llm.variants`: one slot, retried as a whole."""
        from agents.llm.variants import variants_of

        return self._guarded(lambda: variants_of(self.inner, messages, variants, **options))

    def _guarded(self, call: Callable[[], _T]) -> _T:
        """``call`` in a slot, retried with backoff on :class:`LLMError`."""
        if not acquire_cancellable(self._slots, self.name, self.max_wait_s):
            raise LLMBusyError(f"{self.name}: all slots busy for {self.max_wait_s:g} s")
        try:
            for attempt in range(self.retries + 1):
                try:
                    return call()
                except LLMCancelledError:
                    raise
                except LLMError as exc:
                    if attempt == self.retries:
                        raise
                    wait = self.backoff_s * 2**attempt
                    log.warning(
                        "%s failed (%s); retry %d in %.1f s", self.name, exc, attempt + 1, wait
                    )
                    token = current_cancellation()
                    if token is None:
                        time.sleep(wait)
                    elif token.wait(wait):
                        token.raise_if_cancelled(self.name)
            raise AssertionError("unreachable")
        finally:
            self._slots.release()
