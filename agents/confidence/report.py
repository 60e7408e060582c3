"""What an abstaining answer carries (part of :class:`agents.answer.Answer`): why it is
unsure, what could be asked instead, and which meaning of a phrase was meant. Plain models,
in a module of their own so that the answer's module can use them without importing the
signals (which read candidates)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ClarifyOption(BaseModel):
    """One meaning a phrase may have: the knowledge entry that gives it."""

    id: str
    type: str
    name: str
    meaning: str


class Clarification(BaseModel):
    """A question back to the asker: which meaning of ``phrase`` was meant."""

    phrase: str
    question: str
    options: list[ClarifyOption] = Field(default_factory=list)


class Abstention(BaseModel):
    """Why an answer abstained, what could be asked instead, and what to clarify."""

    reasons: list[str] = Field(default_factory=list)
    suggestions: list[str] = Field(default_factory=list)
    clarification: Clarification | None = None
