"""The CoT writer: the teacher tier explains a verified SQL in numbered steps, checked.

:class:`CotWriter` asks its LLM (a collaborator: the teacher tier, any
:class:`agents.llm.base.LLM`) for short numbered steps tying the question's phrases to the
SQL's parts (``prompts/cot_system.j2``, ``cot_user.j2``, which lists those parts as the
checker reads them and, when given, the knowledge behind filters the question does not name, from
:mod:`agents.learn.cot.knowledge`), checks the reply with
:func:`agents.learn.cot.check.check_cot`, and, when it fails, asks once more in the same
conversation with the checker's reasons (``cot_retry.j2``). Only a passing explanation is
returned as text; a failing one comes back with its verdict and no text.

The templates live in ``agents/learn/cot/prompts/``; they are rendered with the same Jinja
settings as :mod:`agents.templates` (strict, trimmed), which looks only one folder deep.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from agents.learn.cot.check import CotVerdict, check_cot, steps_of
from agents.learn.cot.knowledge import CotKnowledge, knowledge_phrases
from agents.learn.cot.sql_parts import read_sql
from agents.llm.base import LLM, LLMCancelledError, LLMError, Message
from agents.templates import render

log = logging.getLogger(__name__)


@dataclass
class CotAttempt:
    """What the writer got for one SQL: the passing ``text`` and ``steps`` (None when no
    attempt passed), the last ``verdict``, the ``attempts`` made and the ``model``."""

    text: str | None
    steps: list[str]
    verdict: CotVerdict
    attempts: int
    model: str
    error: str | None = None
    replies: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.text is not None


def sql_parts(sql: str, dialect: str = "sqlite") -> list[str]:
    """The parts of ``sql`` an explanation must cover, one line each (shown to the model)."""
    parsed = read_sql(sql, dialect)
    facts = parsed.facts
    parts = [f"table {t}" for t in facts.tables]
    parts += [f"join {j.condition}" for j in facts.joins]
    parts += [f"filter {shown}" for shown, _, _ in parsed.filters]
    parts += [f"grouping by {c}" for _, c in dict.fromkeys(facts.group_by)]
    parts += [f"ordering by {shown}" for shown, _, _ in parsed.ordering]
    parts += [f"computed {shown}" for shown, _, _ in parsed.aggregates]
    return parts


class CotWriter:
    """Writes checked step-by-step explanations with ``llm`` (see the module docstring).

    Args:
        llm: the teacher tier's model.
        retries: further attempts with the checker's reasons after a failing one.
        max_tokens: the completion budget of one explanation.
        timeout_s: per call.
    """

    def __init__(
        self, llm: LLM, *, retries: int = 1, max_tokens: int = 320, timeout_s: float | None = 180.0
    ) -> None:
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        self.llm, self.retries = llm, retries
        self.max_tokens, self.timeout_s = max_tokens, timeout_s

    @property
    def model(self) -> str:
        return str(getattr(self.llm, "name", "llm"))

    def write(
        self,
        question: str,
        sql: str,
        *,
        dialect: str = "sqlite",
        schema_names: Iterable[str] = (),
        knowledge: Sequence[CotKnowledge] = (),
    ) -> CotAttempt:
        """A checked explanation of ``sql`` answering ``question`` (the checker's
        :class:`agents.learn.cot.sql_parts.CotCheckError` when ``sql`` does not parse; a model
        error ends the attempts, cancellation is raised). ``knowledge``: the entries behind
        filters the question does not name, shown to the model; the checker accepts their
        names quoted."""
        names = list(schema_names)
        phrases = knowledge_phrases(knowledge)
        messages: list[Message] = [
            {"role": "system", "content": render("cot_system.j2")},
            {
                "role": "user",
                "content": render(
                    "cot_user.j2",
                    question=question,
                    sql=sql,
                    parts=sql_parts(sql, dialect),
                    knowledge=[k.line for k in knowledge],
                ),
            },
        ]
        verdict, replies = CotVerdict(problems=["no attempt"]), []
        for attempt in range(1, self.retries + 2):
            try:
                reply = self.llm.chat(
                    messages, max_tokens=self.max_tokens, temperature=0.0, timeout=self.timeout_s
                ).text
            except LLMCancelledError:
                raise
            except LLMError as exc:
                log.warning("CoT for %r: the model failed: %s", question[:80], exc)
                return CotAttempt(None, [], verdict, attempt, self.model, str(exc), replies)
            replies.append(reply)
            steps = steps_of(reply)
            verdict = check_cot(
                question, sql, reply, dialect=dialect, schema_names=names, phrases=phrases
            )
            if verdict.passed:
                text = "\n".join(f"{i}. {step}" for i, step in enumerate(steps, 1))
                return CotAttempt(text, steps, verdict, attempt, self.model, replies=replies)
            messages += [
                {"role": "assistant", "content": reply},
                {"role": "user", "content": render("cot_retry.j2", reasons=verdict.reasons)},
            ]
        return CotAttempt(None, [], verdict, self.retries + 1, self.model, replies=replies)
