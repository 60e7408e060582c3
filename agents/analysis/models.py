"""What an analysis produces: the evidence (each sub-question's SQL and rows), the findings
that passed the number check, those dropped, and the :class:`AnalysisAnswer` itself."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from agents.analysis.plan import AnalysisPlan
from agents.analysis.typing import QuestionTyping
from agents.answer import Answer


class Evidence(BaseModel):
    """One sub-question as the chain answered it; ``error`` says why it has no rows (the
    query failed, the answer abstained, the time budget ran out); ``repair`` what the
    analyst changed in the chain's SQL (a series regrouped:
    :mod:`agents.analysis.series_repair`)."""

    id: str
    question: str
    purpose: str = ""
    sql: str | None = None
    columns: list[str] = Field(default_factory=list)
    rows: list[list[Any]] = Field(default_factory=list)
    row_count: int = 0
    truncated: bool = False
    error: str | None = None
    seconds: float = 0.0
    repair: str | None = None
    notes: list[str] = Field(default_factory=list)
    """What the reader of the rows must know that the SQL's names do not say (a difference of
    dates computed in days), shown with the rows to the narrative writer."""

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.columns)


class Finding(BaseModel):
    """One statement of the narrative, the evidence it cites (sub-question ids), the numbers
    it uses, and a Vega-Lite v5 chart of its first evidence (None when none fits)."""

    text: str
    evidence: list[str] = Field(default_factory=list)
    numbers: list[float] = Field(default_factory=list)
    chart: dict[str, Any] | None = None


class DroppedFinding(BaseModel):
    """A finding the number check dropped: ``number`` is the first one found in neither its
    evidence nor the computed facts (None when dropped for another ``reason``)."""

    text: str
    evidence: list[str] = Field(default_factory=list)
    number: str | None = None
    reason: str


class AnalysisAnswer(BaseModel):
    """The analysis of one question.

    ``short_answer`` comes first, then ``findings`` (each citing its evidence) and
    ``caveats`` (missing evidence, small samples, what the model could not write).
    ``facts`` are the analysis tools' results; ``narrative_by`` says whether the LLM wrote
    the narrative or it was made from the facts (the LLM's reply was unusable). A lookup is
    answered by the one-SQL chain: ``lookup`` holds that answer. A refused question
    (``refused``: why) has no evidence.
    """

    question: str
    type: str
    typing: QuestionTyping
    plan: AnalysisPlan | None = None
    short_answer: str = ""
    findings: list[Finding] = Field(default_factory=list)
    caveats: list[str] = Field(default_factory=list)
    evidence: list[Evidence] = Field(default_factory=list)
    facts: list[dict[str, Any]] = Field(default_factory=list)
    dropped: list[DroppedFinding] = Field(default_factory=list)
    narrative_by: Literal["llm", "facts", "none"] = "none"
    sql_calls: int = 0
    seconds: float = 0.0
    lookup: Answer | None = None
    refused: str | None = None
