"""The LLM tiers of the serving cascade, built from settings.

Each tier (:class:`server.settings.LLMTierSettings`) is one of

- ``packaged``: a packaged GGUF model by name (``agents.llm.models``; assembled from its PyPI
  parts into ``<data_dir>/models`` on first use, never downloaded) run by llama.cpp;
- ``gguf``: any GGUF file run by llama.cpp;
- ``student``: a student registered by name with ``almanac distill register``
  (:mod:`distill.registry`, ``<data_dir>/models/students/NAME``), its GGUF checked against
  the SHA-256 of its manifest before llama.cpp loads it; every student tier must be
  registered when the tiers are built (at start), a clear error otherwise;
- ``openai``: an OpenAI-compatible endpoint (vLLM, llama.cpp server, Ollama, hosted APIs),

wrapped in :class:`agents.llm.base.ResilientLLM` (retries, a concurrency limit, a bounded wait
that raises ``LLMBusyError``) and in :class:`MeteredLLM` (tokens, calls and latency per tier
in the metrics; a call's outcome is ``ok``, ``busy``, ``cancelled`` or ``error``). A job's
model calls (the ``describe`` job's) go through :class:`BackgroundLLM`: each takes a
background turn at the server's LLM gate, after every question.

Tiers are built lazily: loading a model costs seconds and memory, and a server that only
serves knowledge never needs one.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from agents.llm.base import (
    LLM,
    ChatResult,
    LLMBusyError,
    LLMCancelledError,
    LLMError,
    LLMWrapper,
    Message,
    ResilientLLM,
    cancellation_scope,
    current_cancellation,
)
from agents.llm.llamacpp import LlamaCppLLM
from agents.llm.openai_compat import OpenAICompatibleLLM
from agents.llm.prompt_cache import PromptStateCache, cache_folder
from agents.llm.variants import Variant, variants_of
from distill.registry import StudentError, get_student, verify_student
from server.limits import PREEMPTED, LLMGate
from server.metrics import Metrics
from server.settings import LLMTierSettings

log = logging.getLogger(__name__)
T = TypeVar("T")
PROMPT_CACHE_DIR = "prompt-cache"


class MeteredLLM(LLMWrapper):
    """Counts tokens, calls and latency of ``inner`` under the tier's name; each call by its
    outcome: ``ok``, ``busy`` (no slot within the wait), ``cancelled`` (stopped by its
    :class:`~agents.llm.base.Cancellation`: a cancelled job's) or ``error``."""

    def __init__(self, inner: LLM, tier: str, metrics: Metrics) -> None:
        self.inner, self.tier, self.metrics = inner, tier, metrics
        self.name = inner.name

    def chat(self, messages: Sequence[Message], **options: Any) -> ChatResult:
        return self._metered(lambda: [self.inner.chat(messages, **options)])[0]

    def chat_variants(
        self, messages: Sequence[Message], variants: Sequence[Variant], **options: Any
    ) -> list[ChatResult]:
        """See :mod:`agents.llm.variants`: one call, every reply's tokens counted."""
        return self._metered(lambda: variants_of(self.inner, messages, variants, **options))

    def _metered(self, call: Callable[[], list[ChatResult]]) -> list[ChatResult]:
        started = time.perf_counter()
        try:
            results = call()
        except LLMBusyError:
            self.metrics.record_llm(self.tier, time.perf_counter() - started, outcome="busy")
            raise
        except LLMCancelledError:
            self.metrics.record_llm(self.tier, time.perf_counter() - started, outcome="cancelled")
            raise
        except LLMError:
            self.metrics.record_llm(self.tier, time.perf_counter() - started, outcome="error")
            raise
        self.metrics.record_llm(
            self.tier,
            time.perf_counter() - started,
            prompt_tokens=sum(r.prompt_tokens for r in results),
            completion_tokens=sum(r.completion_tokens for r in results),
        )
        return results


class BackgroundLLM(LLMWrapper):
    """``inner`` (a loaded tier, shared with questions) whose every call first takes a
    background turn at ``gate``: it waits, without the gate's limit and without a slot of the
    queue, until no question is in progress or waiting, so a question asked meanwhile is
    served before the next call; the wait ends with
    :class:`~agents.llm.base.LLMCancelledError` when the current
    :class:`~agents.llm.base.Cancellation` (the job's) is cancelled. A call under way when a
    question is admitted is preempted (:meth:`server.limits.LLMGate.background_turn`) and
    runs again once the questions are answered, so a question waits a fraction of a second
    for the model, not a whole job call."""

    def __init__(self, inner: LLM, gate: LLMGate) -> None:
        self.inner, self.gate = inner, gate
        self.name = inner.name
        self.preempted = 0  # calls a question stopped (and that ran again)

    def chat(self, messages: Sequence[Message], **options: Any) -> ChatResult:
        return self._in_turns(lambda: self.inner.chat(messages, **options))

    def chat_variants(
        self, messages: Sequence[Message], variants: Sequence[Variant], **options: Any
    ) -> list[ChatResult]:
        """See :mod:`agents.llm.variants`: one turn for every variant."""
        return self._in_turns(lambda: variants_of(self.inner, messages, variants, **options))

    def _in_turns(self, call: Callable[[], T]) -> T:
        """``call`` in a preemptible background turn, again in a later turn each time a
        question preempts it (llama.cpp stops it mid-prefill or between tokens, cleanly); a
        cancel of the job itself ends it."""
        while True:
            with self.gate.background_turn(preemptible=True) as token:
                try:
                    with cancellation_scope(token):
                        return call()
                except LLMCancelledError:
                    if token is None or token.reason != PREEMPTED or self._job_cancelled():
                        raise
            self.preempted += 1
            log.info("%s: a question preempted a background call; it runs again later", self.name)

    @staticmethod
    def _job_cancelled() -> bool:
        outer = current_cancellation()
        return outer is not None and outer.cancelled


def build_backend(tier: LLMTierSettings, data_dir: Path) -> LLM:
    """The bare backend of one tier (no retries, no metrics)."""
    if tier.backend == "openai":
        api_key = tier.api_key.get_secret_value() if tier.api_key else "not-needed"
        return OpenAICompatibleLLM(
            str(tier.base_url),
            str(tier.model),
            api_key,
            timeout=tier.timeout_s,
            prefill=tier.prefill,
        )
    if tier.backend == "gguf":
        path = Path(str(tier.path)).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f"LLM tier {tier.name!r}: GGUF file {path} does not exist")
    elif tier.backend == "student":
        return _student_backend(tier, data_dir)
    else:
        from agents.llm.models import DEFAULT_MODEL, pull

        path = pull(tier.model or DEFAULT_MODEL, data_dir, progress=False)
    return _llamacpp(tier, path, data_dir)


def _llamacpp(tier: LLMTierSettings, path: Path, data_dir: Path) -> LlamaCppLLM:
    return LlamaCppLLM(
        str(path),
        n_ctx=tier.n_ctx,
        n_threads=tier.n_threads,
        prompt_cache=prompt_cache(tier, path, data_dir),
        parallel_sequences=tier.parallel_sequences,
    )


def _student_backend(tier: LLMTierSettings, data_dir: Path) -> LLM:
    """A registered student, its GGUF hashed and then loaded; refused when the file changed
    between the hash and the load (the model llama.cpp read is the one verified)."""
    try:
        verified = verify_student(data_dir, str(tier.model))
        llm = _llamacpp(tier, verified.path, data_dir)
        verified.check_unchanged()
    except StudentError as exc:
        raise StudentError(f"LLM tier {tier.name!r}: {exc}") from None
    return llm


def prompt_cache(tier: LLMTierSettings, model: Path, data_dir: Path) -> PromptStateCache | None:
    """The tier's context-state cache under ``data_dir`` (None when turned off)."""
    if tier.prompt_cache_mb <= 0:
        return None
    folder = cache_folder(
        data_dir / PROMPT_CACHE_DIR, str(model), tier.n_ctx, tier.parallel_sequences
    )
    return PromptStateCache(folder, max_bytes=tier.prompt_cache_mb << 20)


def build_llm(tier: LLMTierSettings, data_dir: Path, metrics: Metrics) -> LLM:
    """One tier, ready to serve: backend + retries/limits + metrics."""
    resilient = ResilientLLM(
        build_backend(tier, data_dir),
        retries=tier.retries,
        max_concurrency=tier.max_concurrency,
        max_wait_s=tier.max_wait_s,
    )
    return MeteredLLM(resilient, tier.name, metrics)


class LLMTiers:
    """The configured tiers by name, each built on first use (thread-safe); a ``student``
    tier whose student is not registered is refused here, at start (:class:`StudentError`)."""

    def __init__(self, tiers: Sequence[LLMTierSettings], data_dir: Path, metrics: Metrics) -> None:
        if not tiers:
            raise ValueError("at least one LLM tier is needed")
        self._settings = {tier.name: tier for tier in tiers}
        for tier in tiers:
            if tier.backend == "student":  # cheap (the manifest is read), so at start
                try:
                    get_student(data_dir, str(tier.model))
                except StudentError as exc:
                    raise StudentError(f"LLM tier {tier.name!r}: {exc}") from None
        self.names = [tier.name for tier in tiers]
        self.data_dir, self.metrics = data_dir, metrics
        self._built: dict[str, LLM] = {}
        self._lock = threading.Lock()

    @property
    def default(self) -> str:
        return self.names[0]

    def get(self, name: str | None = None) -> LLM:
        """Tier ``name`` (default: the first), building it when first asked."""
        name = name or self.default
        if name not in self._settings:
            raise KeyError(f"unknown LLM tier {name!r}; configured: {self.names}")
        with self._lock:
            if name not in self._built:
                log.info("loading LLM tier %s (%s)", name, self._settings[name].backend)
                self._built[name] = build_llm(self._settings[name], self.data_dir, self.metrics)
            return self._built[name]

    def decoded_together(self, name: str) -> int:
        """Replies tier ``name`` decodes in one go, known without loading it."""
        tier = self._settings[name]
        return 1 if tier.backend == "openai" else tier.parallel_sequences

    def loaded(self) -> list[str]:
        return sorted(self._built)

    def describe(self) -> list[dict[str, Any]]:
        """Tier names, backends and models, without secrets (for /v1/health)."""
        return [
            {
                "name": tier.name,
                "backend": tier.backend,
                "model": tier.model or (str(tier.path) if tier.path else None),
                "base_url": tier.base_url,
                "loaded": tier.name in self._built,
            }
            for tier in self._settings.values()
        ]
