"""llama-cpp-python plumbing of the embedded backend (:mod:`agents.llm.llamacpp`): the abort
callback that stops a prefill, the GGUF's chat template, and keeping the process's output
while a model loads."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

from agents.llm.base import Cancellation, LLMTimeoutError


@contextlib.contextmanager
def aborted_by(
    llama: Any, token: Cancellation | None, deadline: float | None = None
) -> Iterator[None]:
    """llama.cpp's abort callback on ``llama``'s context, true once ``token`` is cancelled or
    ``deadline`` (``time.perf_counter``) has passed."""
    import llama_cpp

    def abort(_data: Any) -> bool:
        if token is not None and token.cancelled:
            return True
        return deadline is not None and time.perf_counter() > deadline

    context = llama._ctx.ctx
    callback = llama_cpp.ggml_abort_callback(abort)
    llama_cpp.llama_set_abort_callback(context, callback, None)
    try:
        yield
    finally:
        llama_cpp.llama_set_abort_callback(context, llama_cpp.ggml_abort_callback(), None)


def raise_if_late(name: str, deadline: float | None, tokens: int) -> None:
    """:class:`LLMTimeoutError` when ``deadline`` (``time.perf_counter``) has passed before or
    during the prefill of ``tokens`` tokens by model ``name``."""
    if deadline is not None and time.perf_counter() > deadline:
        raise LLMTimeoutError(f"{name}: no answer within the timeout (prefill of {tokens} tokens)")


def chat_template(llama: Any) -> Any:
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


class _NoRedirect:
    """Stands in for llama-cpp-python's ``suppress_stdout_stderr`` (same signature)."""

    def __init__(self, disable: bool = True) -> None:
        self.disable = disable

    def __enter__(self) -> _NoRedirect:
        return self

    def __exit__(self, *_exc: object) -> None:
        return None


def keep_process_output() -> None:
    """Stop llama-cpp-python from silencing the whole process while it loads a model.

    With ``verbose=False`` it wraps loading in ``suppress_stdout_stderr``, which points file
    descriptors 1 and 2 *of the process* at /dev/null: whatever another thread prints
    meanwhile is lost (``almanac init`` loads the model in the background while it prints
    what it profiled; ``serve`` logs while tiers load). llama.cpp's own messages go through
    its log callback, which ``verbose=False`` already limits to errors, so nothing is
    printed without the redirection either. Every module of it that imports the redirection
    gets the stand-in. Idempotent; done at the first model load, not at import.
    """
    import importlib

    for name in ("llama_cpp.llama", "llama_cpp._internals", "llama_cpp.llama_chat_format"):
        module = importlib.import_module(name)
        if getattr(module, "suppress_stdout_stderr", _NoRedirect) is not _NoRedirect:
            setattr(module, "suppress_stdout_stderr", _NoRedirect)  # noqa: B010
