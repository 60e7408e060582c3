"""Token log probabilities read from llama.cpp's logits, without ``logits_all``.

A generated token's log probability is the log-softmax of the logits it was drawn from, at
that token: as the model scored it, before temperature, top-k or a grammar narrowed the
choice. :func:`token_logprob` computes it from one row of logits (float64, max-shifted: no
overflow, no ``-inf`` short of a true zero).

llama-cpp-python's ``Llama.generate`` evaluates the prompt first, then each token right after
sampling it, alone. Just before that evaluation the context's last logits are still the ones
the token was drawn from; a :class:`TokenLogprobs` sink, shown every evaluation of one
generation, records the token's log probability then. The first evaluation of a generation
is its prompt (or what is left of it after a reused prefix, possibly one token or none) and
records nothing. The last token of a reply (the one that hit a stop or the token limit) is
never evaluated, so it has no log probability; an end-of-generation token is not part of the
reply and has none either.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np


def token_logprob(logits: np.ndarray, token: int) -> float:
    """The natural-log probability of ``token`` under the softmax of ``logits``."""
    values = np.asarray(logits, dtype=np.float64)
    top = values.max()
    return float(values[token] - top - np.log(np.exp(values - top).sum()))


class TokenLogprobs:
    """The log probabilities of the tokens one generation sampled, in order.

    Args:
        last_logits: the context's logits of its last evaluated token (read when called).
    """

    def __init__(self, last_logits: Callable[[], np.ndarray]) -> None:
        self._last_logits = last_logits
        self._prompt_seen = False
        self.values: list[float] = []

    def before_eval(self, tokens: Sequence[int]) -> None:
        """Called with what is about to be evaluated: a generated token is recorded."""
        if not self._prompt_seen:  # the prompt (or its unreused part) comes first
            self._prompt_seen = True
            return
        if len(tokens) == 1:
            self.values.append(token_logprob(self._last_logits(), tokens[0]))

    def result(self) -> tuple[float, ...] | None:
        """The recorded log probabilities; None when no token was recorded."""
        return tuple(self.values) if self.values else None


def tail(logprobs: Sequence[float] | None, text: str, chars_per_token: float = 3.0) -> list[float]:
    """The log probabilities of about the last ``len(text) / chars_per_token`` tokens: those
    of ``text`` when it ends the reply (a SQL statement after the model's reasoning header).
    Code runs about 3 characters a token in the Qwen tokenizer; an over-estimate reaches a
    little into the text before, never past the reply."""
    if not logprobs or not text:
        return []
    count = max(1, min(len(logprobs), round(len(text) / chars_per_token)))
    return list(logprobs[-count:])


def summary(logprobs: Sequence[float] | None) -> tuple[float | None, float | None]:
    """(mean, min) of ``logprobs``; (None, None) when there are none."""
    if not logprobs:
        return None, None
    return float(np.mean(logprobs)), float(min(logprobs))
