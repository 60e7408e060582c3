"""The SQL-gen agent: a prompt from the RAG context, SQL candidates from the model.

The prompt (``prompts/generate_system.j2`` and ``prompts/generate_user.j2``) holds the schema
slice, the knowledge hints (rules, metrics, values with their question words), few-shot
experiences with their reasoning, the user profile, the query time and the dialect. The most
stable parts come first, so a local model's prompt cache is reused across questions.

Sample 0 is greedy; the others are drawn at ``temperature`` with their own seed, so a vote
sees different candidates. :meth:`SqlGenerator.draw` asks for several at once, which a model
that decodes them together answers in little more than the time of one. A reply without SQL
becomes a failed candidate, not an exception. A candidate keeps the mean and the least of the
log probabilities of the reply's tokens, when the model gave them (a confidence signal).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agents.answer import Candidate
from agents.learn.cot.record import checked_cot
from agents.llm.base import LLM, ChatResult, LLMCancelledError, LLMError, Message
from agents.llm.variants import Variant, chat_variants
from agents.rag.agent import RagContext
from agents.sql.extract import NoSQLError, extract_sql
from agents.templates import render
from kb.target.results import Results
from ukf import BaseUKF, QueryContext

log = logging.getLogger(__name__)
DIALECT_NAMES = {"sqlite": "SQLite", "postgresql": "PostgreSQL", "mysql": "MySQL"}


def dialect_name(dialect: str) -> str:
    return DIALECT_NAMES.get(dialect.lower(), dialect)


SQL_FENCE = "```sql\n"
FENCE_END = "```"


@dataclass
class GenerateOptions:
    """Sampling options.

    A fenced reply starts inside an open ```sql fence and stops at the closing one: the model
    writes the query (and its comment lines) and nothing else. ``fence_greedy`` fences sample
    0, the model's direct answer. ``fence_samples`` fences the samples drawn at temperature;
    off by default, because a large model's free samples often reason in prose before the
    query, and that reasoning is what makes them differ usefully in a vote (Spider 60, 1.5B,
    n = 5: EX 0.683 with free samples, 0.633 with all fenced; n = 1: 0.650). A small cascade
    tier fences them: the 0.5B's free samples ran 150-320 tokens of mostly wrong reasoning
    where its query takes 12-70.

    ``show_cot`` shows each example's checked CoT (:mod:`agents.learn.cot`: numbered steps
    tying the question to the SQL, stored on the experience) as comment lines above its SQL,
    in place of its one-line reasoning; off by default, and an example without a passing CoT
    is shown as before.
    """

    max_tokens: int = 320
    temperature: float = 0.7
    timeout_s: float | None = 120.0
    seed: int = 0
    fence_greedy: bool = True
    fence_samples: bool = False
    show_cot: bool = False


class SqlGenerator:
    """Writes SQL candidates with one LLM.

    Args:
        llm: the model.
        dialect: the target database's SQL dialect ("sqlite", "postgresql", ...).
        options: sampling options.
    """

    def __init__(self, llm: LLM, dialect: str, options: GenerateOptions | None = None) -> None:
        self.llm, self.dialect = llm, dialect
        self.options = options or GenerateOptions()

    def messages(self, rag: RagContext, context: QueryContext | None = None) -> list[Message]:
        """The chat messages for ``rag`` asked in ``context`` (user profile, query time)."""
        context = context or QueryContext()
        examples = [
            {
                "question": e.content_resources.get("question", e.name),
                "sql": (e.content_resources.get("sql") or "").strip().rstrip(";"),
                "cot": _one_line(e.content_resources.get("cot") or ""),
                "steps": self._steps(e),
                "asked": asked_differently(e.content_resources.get("context") or {}, context),
            }
            for e in rag.examples
        ]
        return prompt_messages(
            "generate_user.j2",
            self.dialect,
            question=rag.question,
            schema=rag.schema,
            hints=rag.hints,
            summary=rag.summary,
            examples=examples,
            user_profile=dict(context.user_profile),
            query_time=context.query_time_text(),
            dates=rag.dates,
            resolved=rag.resolved,
        )

    def _steps(self, example: BaseUKF) -> list[str]:
        """The example's checked CoT steps when ``show_cot`` is on (else none)."""
        if not self.options.show_cot:
            return []
        return [_one_line(step) for step in checked_cot(example) or []]

    def sample(self, messages: list[Message], index: int) -> Candidate:
        """Candidate number ``index`` (0 = greedy)."""
        return self.draw(messages, [index])[0]

    def draw(self, messages: list[Message], indices: Sequence[int]) -> list[Candidate]:
        """Candidates ``indices`` (0 = greedy), decoded together when the model can
        (:mod:`agents.llm.variants`); a sample the model failed is a failed candidate."""
        variants = [self.variant(index) for index in indices]
        try:
            replies = chat_variants(
                self.llm,
                messages,
                variants,
                max_tokens=self.options.max_tokens,
                timeout=self.options.timeout_s,
            )
        except LLMCancelledError as exc:  # the question's deadline, a decided tier, a job
            replies = [exc] * len(indices)
        return [
            self._candidate(index, reply) for index, reply in zip(indices, replies, strict=True)
        ]

    def variant(self, index: int) -> Variant:
        """How sample ``index`` is drawn: greedy first, then at the temperature."""
        greedy = index == 0
        fenced = self.options.fence_greedy if greedy else self.options.fence_samples
        fence = fence_options(fenced)
        return Variant(
            temperature=0.0 if greedy else self.options.temperature,
            seed=self.options.seed + index,
            reply_prefix=fence.get("reply_prefix"),
            stop=tuple(fence.get("stop", ())),
        )

    def _candidate(self, index: int, reply: ChatResult | LLMError) -> Candidate:
        if isinstance(reply, LLMError):
            log.warning("sample %d from %s failed: %s", index, self.llm.name, reply)
            return failed_candidate(f"model failed: {reply}", self.llm.name, index)
        candidate = candidate_from_reply(reply.text, self.llm.name, index)
        candidate.prompt_tokens, candidate.completion_tokens = (
            reply.prompt_tokens,
            reply.completion_tokens,
        )
        if candidate.sql:  # a reply without SQL is a failed candidate: no confidence to give
            candidate.scored_by(reply.completions[0].logprobs)
        return candidate

    def samples(
        self, messages: list[Message], n: int, *, cancel: threading.Event | None = None
    ) -> Iterator[Candidate]:
        """Up to ``n`` candidates, one at a time; stops early when ``cancel`` is set."""
        for index in range(n):
            if cancel is not None and cancel.is_set():
                return
            yield self.sample(messages, index)


def fence_options(fenced: bool) -> dict[str, Any]:
    """``chat`` options that start the reply inside a ```sql fence and stop at its end."""
    return {"reply_prefix": SQL_FENCE, "stop": [FENCE_END]} if fenced else {}


def prompt_messages(user_template: str, dialect: str, **variables: Any) -> list[Message]:
    """System prompt (output format) + the user prompt ``user_template``."""
    name = dialect_name(dialect)
    return [
        {"role": "system", "content": render("generate_system.j2", dialect_name=name)},
        {"role": "user", "content": render(user_template, dialect_name=name, **variables)},
    ]


def candidate_from_reply(text: str, model: str, index: int) -> Candidate:
    try:
        found = extract_sql(text)
    except NoSQLError as exc:
        return failed_candidate(str(exc), model, index)
    return Candidate(sql=found.sql, reasoning=found.reasoning, model=model, sample=index)


def failed_candidate(message: str, model: str, index: int) -> Candidate:
    return Candidate(
        sql="",
        model=model,
        sample=index,
        results=Results.failure("sql", message, sql="", elapsed=0.0),
    )


def asked_differently(example: Mapping[str, Any], current: QueryContext) -> str:
    """How an example's stored context (:meth:`QueryContext.record`) differs from the
    question's: its date, and the profile values that differ ("asked on 2024-05-20 by
    department=BO, currency=USD"). An example's "our" and "this month" meant that asker's
    department and that date."""
    parts: list[str] = []
    when = _time_text(example.get("query_time"))[:10]
    if when and when != current.query_time_text()[:10]:
        parts.append(f"asked on {when}")
    theirs = dict(example.get("user_profile") or {})
    mine = dict(current.user_profile)
    differing = [
        f"{key}={value}"
        for key, value in theirs.items()
        if key != "user" and value is not None and mine.get(key) != value
    ]
    if differing:
        parts.append(("by " if parts else "asked by ") + ", ".join(differing))
    return " ".join(parts)


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300]


def _time_text(value: Any) -> str:
    if value is None:
        return ""
    return value.isoformat() if hasattr(value, "isoformat") else str(value)
