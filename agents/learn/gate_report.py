"""What the regression gate (:mod:`agents.learn.gate`) replays, how it batches, and what
it reports: the held questions, the options, one evaluation, one decision and the run's
report (with the note each decided entry gets in ``metadata["mining"]["gate"]``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ukf import ExperienceUKF, QueryContext


@dataclass(frozen=True)
class HeldQuestion:
    """A verified question the gate replays: its id (the experience's), text, gold SQL and
    the context it was asked in."""

    id: str
    question: str
    sql: str
    context: QueryContext = field(default_factory=QueryContext)

    @classmethod
    def of(cls, experience: ExperienceUKF) -> HeldQuestion:
        if not experience.sql:
            raise ValueError(f"experience {experience.id} has no SQL to hold: {experience.name}")
        return cls(experience.id, experience.question, experience.sql, experience.context)


@dataclass
class GateOptions:
    """How the gate batches and measures.

    Attributes:
        batch_size: candidates decided together (bisected when they break something).
        per_entry_up_to: batches this small are measured entry by entry instead.
        max_rows: rows compared per result (gold and answer alike).
    """

    batch_size: int = 8
    per_entry_up_to: int = 1
    max_rows: int = 10_000

    def __post_init__(self) -> None:
        if self.batch_size < 1 or self.per_entry_up_to < 1:
            raise ValueError(
                f"batch_size and per_entry_up_to must be >= 1, got "
                f"{self.batch_size}, {self.per_entry_up_to}"
            )


@dataclass
class Evaluation:
    """One measurement: the held questions answered with ``ids`` on (besides those already
    activated)."""

    ids: list[str]
    correct: dict[str, bool]
    asked: int
    seconds: float

    @property
    def ex(self) -> float:
        return sum(self.correct.values()) / len(self.correct) if self.correct else 0.0


@dataclass
class GateDecision:
    """What the gate did with a group of candidates and the effect it measured."""

    ids: list[str]
    activated: bool
    ex_without: float
    ex_with: float
    fixed: list[str]  # held question ids right with the group only
    broken: list[str]  # held question ids right without it only
    asked: int  # questions re-asked for this measurement
    seconds: float

    def note(self, held: int) -> dict[str, Any]:
        return {
            "decision": "activated" if self.activated else "rejected",
            "ex_without": round(self.ex_without, 4),
            "ex_with": round(self.ex_with, 4),
            "held": held,
            "group": len(self.ids),
            "fixed": self.fixed,
            "broken": self.broken,
            "at": datetime.now(UTC).isoformat(),
        }


@dataclass
class GateReport:
    """The gate's run: baseline, decisions, costs."""

    held: int = 0
    targeted: int = 0  # held questions saying a candidate's phrase (agents.learn.gate_held)
    excluded: list[str] = field(default_factory=list)  # held ids left out: candidates' sources
    baseline_ex: float = 0.0
    final_ex: float = 0.0
    decisions: list[GateDecision] = field(default_factory=list)
    evaluations: int = 0
    asked: int = 0
    retrievals: int = 0
    llm_calls: int | None = None
    copy_seconds: float = 0.0  # the scratch copy (export + import)
    index_seconds: float = 0.0  # its indices
    seconds: float = 0.0
    cancelled: bool = False
    # held ids right before a batch, wrong with all it activated on although no group of it
    # broke them alone (groups that pass separately and not together; kept, reported)
    combined_broken: list[str] = field(default_factory=list)

    @property
    def setup_seconds(self) -> float:
        return self.copy_seconds + self.index_seconds

    @property
    def activated(self) -> list[str]:
        return [uid for d in self.decisions if d.activated for uid in d.ids]

    @property
    def rejected(self) -> list[str]:
        return [uid for d in self.decisions if not d.activated for uid in d.ids]

    def to_dict(self) -> dict[str, Any]:
        return {
            "held": self.held,
            "targeted": self.targeted,
            "excluded": self.excluded,
            "baseline_ex": round(self.baseline_ex, 4),
            "final_ex": round(self.final_ex, 4),
            "activated": self.activated,
            "rejected": self.rejected,
            "decisions": [d.__dict__ | d.note(self.held) for d in self.decisions],
            "evaluations": self.evaluations,
            "asked": self.asked,
            "retrievals": self.retrievals,
            "llm_calls": self.llm_calls,
            "setup_seconds": round(self.setup_seconds, 3),
            "copy_seconds": round(self.copy_seconds, 3),
            "index_seconds": round(self.index_seconds, 3),
            "combined_broken": self.combined_broken,
            "seconds": round(self.seconds, 3),
            "cancelled": self.cancelled,
        }
