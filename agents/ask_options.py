"""What one question asks of the pipeline: :class:`AskOptions`, and the question's checks."""

from __future__ import annotations

from dataclasses import dataclass

from agents.llm.base import Cancellation, current_cancellation

MAX_QUESTION_CHARS = 2000


@dataclass
class AskOptions:
    """Per-question options.

    Attributes:
        n: candidates from the default model (test-time scaling when > 1).
        cascade: run the tiers small to large instead.
        execute: run the SQL; False returns the greedy SQL unexecuted.
        max_rows: rows returned in the answer.
        explore: let the model search the knowledge base with tools before writing SQL
            (None: as the pipeline's ``rag.explore`` option says).
        deadline_s: seconds from the start of ``ask`` after which no sample is drawn, no
            query starts and no repair is asked (None: no deadline; each query still has
            the database's time limit).
        adaptive: draw more samples only while the answer's confidence is under the
            target (``ConfidenceOptions``), up to ``n`` samples when ``n`` > 1, else up to
            the configured budget (None: as the pipeline's confidence options say; an
            explicit ``n`` > 1 with None samples ``n`` as before).
        abstain: let an unsure answer abstain (False: always answer, with its confidence).
    """

    n: int = 1
    cascade: bool = False
    execute: bool = True
    max_rows: int = 100
    explore: bool | None = None
    deadline_s: float | None = None
    adaptive: bool | None = None
    abstain: bool = True

    def __post_init__(self) -> None:
        if not 1 <= self.n <= 16:
            raise ValueError(f"n must be between 1 and 16, got {self.n}")
        if self.deadline_s is not None and not self.deadline_s > 0:
            raise ValueError(f"deadline_s must be positive, got {self.deadline_s}")
        if not 0 <= self.max_rows <= 10_000:
            raise ValueError(f"max_rows must be between 0 and 10000, got {self.max_rows}")


class QuestionError(ValueError):
    """A question that cannot be asked (empty, too long)."""


def checked_question(question: str) -> str:
    """The question stripped; :class:`QuestionError` when it is empty or too long."""
    if not isinstance(question, str) or not question.strip():
        raise QuestionError("the question is empty")
    if len(question) > MAX_QUESTION_CHARS:
        raise QuestionError(
            f"the question has {len(question)} characters; at most {MAX_QUESTION_CHARS}"
        )
    return question.strip()


def deadline_token(deadline: float | None) -> Cancellation | None:
    """The token that stops a question's model calls at its deadline (a ``monotonic`` time,
    from :attr:`AskOptions.deadline_s`) and when the caller's own token is cancelled; without
    a deadline, the caller's token."""
    if deadline is None:
        return current_cancellation()
    return Cancellation(
        parent=current_cancellation(),
        deadline=deadline,
        deadline_reason="the question's deadline passed",
    )
