"""Several replies to one prompt, each with its own sampling: ``chat_variants``.

Test-time scaling and the cascade draw a greedy reply and samples at a temperature from the
same messages. A backend that can decode them together (llama.cpp in-process, see
:mod:`agents.llm.parallel_decode`) says so with a true ``variants_together`` attribute and has
a ``chat_variants(messages, variants, max_tokens=, timeout=)`` method; wrappers pass both on
from what they wrap. Any other :class:`~agents.llm.base.LLM` is asked one ``chat`` call per variant.

:func:`chat_variants` is the caller's entry point: a failure becomes that variant's reply
(an :class:`~agents.llm.base.LLMError`), so one bad sample does not lose the others, while
:class:`~agents.llm.base.LLMBusyError` propagates (the caller answers 429/503), and so does
:class:`~agents.llm.base.LLMCancelledError` (the work was stopped, not the sample).
:func:`variants_of` raises instead; wrappers (retries, metrics, caches) build on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agents.llm.base import LLM, ChatResult, LLMBusyError, LLMCancelledError, LLMError, Message


@dataclass(frozen=True)
class Variant:
    """One reply of a :func:`chat_variants` call (see ``LLM.chat`` for the fields)."""

    temperature: float = 0.0
    seed: int = 0
    reply_prefix: str | None = None
    stop: tuple[str, ...] = ()

    def chat_options(self) -> dict[str, Any]:
        """The equivalent ``chat`` keyword arguments (one completion)."""
        options: dict[str, Any] = {"temperature": self.temperature, "seed": self.seed}
        if self.reply_prefix:
            options["reply_prefix"] = self.reply_prefix
        if self.stop:
            options["stop"] = list(self.stop)
        return options


def variants_of(
    llm: LLM,
    messages: Sequence[Message],
    variants: Sequence[Variant],
    *,
    max_tokens: int = 512,
    timeout: float | None = None,
) -> list[ChatResult]:
    """One reply per variant, together when ``llm`` can; the first failure raises."""
    together = _together(llm)
    if together is not None:
        return list(together(messages, variants, max_tokens=max_tokens, timeout=timeout))
    return [
        llm.chat(messages, max_tokens=max_tokens, timeout=timeout, **v.chat_options())
        for v in variants
    ]


def chat_variants(
    llm: LLM,
    messages: Sequence[Message],
    variants: Sequence[Variant],
    *,
    max_tokens: int = 512,
    timeout: float | None = None,
) -> list[ChatResult | LLMError]:
    """One reply per variant; a variant that failed gets its error instead of a reply."""
    options = {"max_tokens": max_tokens, "timeout": timeout}
    together = _together(llm)
    if together is not None and len(variants) > 1:
        try:
            return list(together(messages, variants, **options))
        except (LLMBusyError, LLMCancelledError):
            raise
        except LLMError as exc:
            return [exc] * len(variants)
    replies: list[ChatResult | LLMError] = []
    for variant in variants:
        try:
            replies.append(llm.chat(messages, **options, **variant.chat_options()))
        except (LLMBusyError, LLMCancelledError):
            raise
        except LLMError as exc:
            replies.append(exc)
    return replies


def together_capacity(llm: LLM) -> int:
    """Variants ``llm`` decodes in one go (1: one at a time)."""
    if not getattr(llm, "variants_together", False):
        return 1
    return max(1, int(getattr(llm, "parallel_sequences", 1)))


def _together(llm: LLM) -> Any:
    """``llm.chat_variants`` when it decodes variants together, else None."""
    return getattr(llm, "chat_variants", None) if getattr(llm, "variants_together", False) else None
