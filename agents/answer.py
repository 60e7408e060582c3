"""What the agent chain produces: candidates along the way and the final ``Answer``.

``Candidate`` is one SQL proposal with its execution outcome; ``Answer`` is what an analyst
gets back (and what ``POST /v1/ask`` returns): the SQL, truncated rows, a confidence, the tier
that answered, the knowledge used with the question spans that brought it in, the reasoning,
and per-stage timings and token counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from agents.confidence.report import Abstention
from kb.target.results import Results


@dataclass
class Candidate:
    """One SQL proposal and what happened when it ran.

    Attributes:
        sql: the SQL as the model wrote it (comment header included).
        reasoning: the model's reasoning (comment header or text before the SQL).
        model: the LLM that wrote it.
        sample: index of the sample in its tier (0 = greedy).
        tier: name of the cascade tier ("" outside a cascade).
        results: execution outcome; None when it was not executed.
        repairs: repair rounds it went through.
        notes: what refinement changed (e.g. a predicate value corrected).
        fingerprint: the vote key of its results (set by ``agents.sql.vote``).
        logprob_mean: mean natural-log probability of the tokens the model generated for
            it (None when the backend gave none); a confidence signal.
        logprob_min: the least likely generated token's log probability.
        sql_logprob_mean, sql_logprob_min: the same over the tokens of the SQL statement
            alone (the reply's last tokens; the reasoning header before it is left out).
        template_id: the mined query template it was filled from, with no model call
            (:mod:`agents.sql.template_fill`); None for a model's candidate.
    """

    sql: str
    reasoning: str = ""
    model: str = ""
    sample: int = 0
    tier: str = ""
    results: Results | None = None
    repairs: int = 0
    notes: list[str] = field(default_factory=list)
    fingerprint: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    generate_seconds: float = 0.0
    refine_seconds: float = 0.0
    logprob_mean: float | None = None
    logprob_min: float | None = None
    sql_logprob_mean: float | None = None
    sql_logprob_min: float | None = None
    template_id: str | None = None

    def scored_by(self, logprobs: Sequence[float] | None) -> None:
        """Set the log-probability summaries from the reply's token ``logprobs``."""
        from agents.llm.logprobs import summary, tail
        from agents.sql.extract import statement_only

        self.logprob_mean, self.logprob_min = summary(logprobs)
        statement = statement_only(self.sql) if self.sql else ""
        self.sql_logprob_mean, self.sql_logprob_min = summary(tail(logprobs, statement))

    @property
    def ok(self) -> bool:
        """Executed without error (an empty result counts as ok)."""
        return self.results is not None and self.results.ok

    @property
    def error(self) -> str | None:
        if self.results is None:
            return None
        return self.results.error

    def summary(self) -> CandidateSummary:
        return CandidateSummary(
            sql=self.sql,
            model=self.model,
            tier=self.tier,
            sample=self.sample,
            ok=self.ok,
            error=self.error,
            row_count=self.results.row_count if self.results else None,
            repairs=self.repairs,
            notes=list(self.notes),
            fingerprint=self.fingerprint,
            template_id=self.template_id,
        )


class CandidateSummary(BaseModel):
    sql: str
    model: str = ""
    tier: str = ""
    sample: int = 0
    ok: bool = False
    error: str | None = None
    row_count: int | None = None
    repairs: int = 0
    notes: list[str] = Field(default_factory=list)
    fingerprint: str | None = None
    template_id: str | None = None
    """The mined query template the candidate was filled from (no model call)."""


class UsedKnowledge(BaseModel):
    """One knowledge entry that went into the prompt, and why."""

    id: str
    type: str
    name: str
    reasons: list[str] = Field(default_factory=list)
    spans: list[tuple[int, int]] = Field(default_factory=list)
    phrases: list[str] = Field(default_factory=list)
    mined: str | None = None
    """For knowledge mined from the query log, the trust of what it was mined from
    (``verified``, ``labeled`` or ``unlabeled``: mined from questions nobody checked, by the
    vote); None for knowledge written by people, imported or profiled."""


class StageReport(BaseModel):
    """Wall time and LLM tokens of one stage of the chain."""

    stage: str
    seconds: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    detail: dict[str, Any] = Field(default_factory=dict)


class Answer(BaseModel):
    """The chain's answer to one question.

    ``sql`` is the statement alone, without the comment lines the model wrote around it (its
    reasoning header goes to ``reasoning``). When no candidate ran, ``error`` says why and
    ``sql`` is the first candidate's statement (None when the model gave none).
    ``rows`` holds at most ``max_rows`` rows (``truncated`` tells whether more existed).
    ``confidence`` is the calibrated probability that the answer is right
    (:mod:`agents.confidence`), computed from ``signals`` by the ``calibrator`` named;
    ``vote_share`` is the winning result's share of the samples drawn (``samples``).
    ``tier`` is ``template`` for an answer filled from a mined query template with no model
    call (its candidate's ``template_id`` and ``knowledge`` name the template).
    An answer whose confidence is under the deployment's threshold ``abstained``: its
    ``abstention`` says why, offers nearby answerable questions or asks which meaning of a
    phrase was meant, and (by default) its rows are withheld (``withheld_rows`` of them).
    """

    id: str
    question: str
    database: str
    sql: str | None = None
    columns: list[str] = Field(default_factory=list)
    rows: list[list[Any]] = Field(default_factory=list)
    row_count: int = 0
    truncated: bool = False
    executed: bool = False
    confidence: float = 0.0
    vote_share: float = 0.0
    samples: int = 0
    signals: dict[str, float] = Field(default_factory=dict)
    calibrator: str | None = None
    abstained: bool = False
    abstention: Abstention | None = None
    withheld_rows: int = 0
    tier: str | None = None
    reasoning: str = ""
    knowledge: list[UsedKnowledge] = Field(default_factory=list)
    candidates: list[CandidateSummary] = Field(default_factory=list)
    stages: list[StageReport] = Field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    experience_id: str | None = None
    error: str | None = None

    def stage(self, name: str) -> StageReport | None:
        return next((s for s in self.stages if s.stage == name), None)
