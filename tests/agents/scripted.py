"""A scripted LLM for orchestration tests: replies come from a function or a list."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from agents.confidence.assess import CalibratorSource, ConfidenceAssessor, ConfidenceOptions
from agents.confidence.calibrator import FittedOn
from agents.llm.base import ChatResult, Completion, LLMTimeoutError, Message

Reply = str | Exception | Callable[[list[Message], dict[str, Any]], str]


class ScriptedLLM:
    """Answers each call with the next scripted reply (the last one repeats).

    A reply may be a string, an exception to raise, or ``f(messages, options) -> str``.
    ``delay_s`` simulates a slow model (a ``timeout`` shorter than it raises
    :class:`LLMTimeoutError`, like the real backends).
    """

    def __init__(self, replies: Sequence[Reply], *, name: str = "scripted", delay_s: float = 0.0):
        self.replies, self.name, self.delay_s = list(replies), name, delay_s
        self.calls: list[tuple[list[Message], dict[str, Any]]] = []
        self._lock = threading.Lock()

    def chat(self, messages: Sequence[Message], **options: Any) -> ChatResult:
        with self._lock:
            index = len(self.calls)
            self.calls.append((list(messages), options))
            reply = self.replies[min(index, len(self.replies) - 1)]
        timeout = options.get("timeout")
        if self.delay_s:
            if timeout is not None and timeout < self.delay_s:
                time.sleep(timeout)
                raise LLMTimeoutError(f"{self.name}: no answer within {timeout} s")
            time.sleep(self.delay_s)
        if isinstance(reply, Exception):
            raise reply
        text = reply(list(messages), options) if callable(reply) else reply
        n = options.get("n", 1)
        return ChatResult(
            completions=[Completion(text, "stop") for _ in range(n)],
            model=self.name,
            prompt_tokens=sum(len(m["content"]) // 4 for m in messages),
            completion_tokens=len(text) // 4,
            latency_s=self.delay_s,
        )


def asked_question(messages: Sequence[Message]) -> str:
    """The question a CoT writer's prompt asks about: the last turn in the ``Question: ...``
    form (a retry's reasons come after it)."""
    asked = [str(m["content"]) for m in messages if str(m["content"]).startswith("Question: ")]
    return asked[-1].splitlines()[0].removeprefix("Question: ")


def sql_reply(sql: str, reasoning: str = "scripted") -> str:
    return f"```sql\n-- Tables: any\n-- Reasoning: {reasoning}\n{sql}\n```"


class ScriptedTogetherLLM(ScriptedLLM):
    """A scripted model that decodes variants together (see ``agents.llm.variants``): each
    ``chat_variants`` call is recorded in ``batches`` and answered variant by variant."""

    variants_together = True

    def __init__(self, replies: Sequence[Reply], *, name: str = "together", sequences: int = 5):
        super().__init__(replies, name=name)
        self.parallel_sequences = sequences
        self.batches: list[list[Any]] = []

    def chat_variants(
        self, messages: Sequence[Message], variants: Sequence[Any], **options: Any
    ) -> list[ChatResult]:
        self.batches.append(list(variants))
        return [self.chat(messages, **options, **v.chat_options()) for v in variants]


class ShareCalibrator:
    """A calibrator whose confidence is the vote's winning share (what an answer's confidence
    was before calibration): for orchestration tests whose outcome must not depend on the
    packaged calibrator. One sample that ran is fully confident."""

    method, version, source = "share", 1, "test"
    fitted_on = FittedOn(0, 0)

    def predict(self, features: dict[str, float]) -> float:
        return features.get("vote_share", 1.0 - features.get("failed_share", 0.0))


def share_confidence(store: Any, database: str, **options: Any) -> ConfidenceAssessor:
    """An assessor of ``database``'s answers by :class:`ShareCalibrator`."""
    return ConfidenceAssessor(
        store,
        database,
        calibrators=CalibratorSource(fallback=ShareCalibrator()),  # type: ignore[arg-type]
        options=ConfidenceOptions(**options),
    )
