"""The refine agent's bookkeeping on candidates: what a problem is, the notes a rewrite or a
repair adds, which version of a candidate the repairs leave (:mod:`agents.sql.refine`)."""

from __future__ import annotations

from dataclasses import dataclass

from agents.answer import Candidate
from agents.sql.extract import strip_comments
from agents.sql.predicates import PredicateIssue

DEADLINE_NOTE = "stopped: the answer's deadline had passed"


@dataclass
class Problem:
    """What is wrong with an executed candidate, as the repair prompt says it."""

    text: str
    repairable: bool = True
    issues: list[PredicateIssue] | None = None
    rejected: bool = False  # the database rejected the SQL (not a refusal or a timeout)
    empty: bool = False  # it ran and returned no data


def new_notes(notes: list[str], had: list[str]) -> list[str]:
    """The ``notes`` not among ``had`` (a filter added again after a repair is noted once)."""
    return [n for n in notes if n not in had]


def with_data(candidate: Candidate) -> Candidate | None:
    """``candidate`` when it ran and returned data (a repair that then fails or comes back
    empty does not replace it: :func:`kept`), else None."""
    results = candidate.results
    return candidate if results is not None and results.ok and results.has_data else None


def kept(last: Candidate, ran: Candidate | None) -> Candidate:
    """What the repairs leave: ``last``, unless it has no data and an earlier version
    (``ran``: one whose join linked nothing) did."""
    if ran is None or ran is last or with_data(last) is not None:
        return last
    note = "repairs gave no rows: the query that ran is kept"
    ran.notes = [*ran.notes, *new_notes([note], ran.notes)]
    return ran


def stopped(candidate: Candidate) -> Candidate:
    """``candidate`` as it stands, noted as stopped by the deadline."""
    if DEADLINE_NOTE not in candidate.notes:
        candidate.notes = [*candidate.notes, DEADLINE_NOTE]
    return candidate


def query_key(sql: str) -> str:
    """``sql`` without comments and with its whitespace collapsed, for spotting a repeat."""
    return " ".join(strip_comments(sql).split()).rstrip(";").lower() if sql else ""


def rewritten(candidate: Candidate, sql: str, notes: list[str]) -> Candidate:
    """``candidate`` with ``sql`` rewritten without the model (not a repair round)."""
    return Candidate(
        sql=sql,
        reasoning=candidate.reasoning,
        model=candidate.model,
        sample=candidate.sample,
        tier=candidate.tier,
        repairs=candidate.repairs,
        notes=[*candidate.notes, *notes],
        prompt_tokens=candidate.prompt_tokens,
        completion_tokens=candidate.completion_tokens,
        logprob_mean=candidate.logprob_mean,
        logprob_min=candidate.logprob_min,
        sql_logprob_mean=candidate.sql_logprob_mean,
        sql_logprob_min=candidate.sql_logprob_min,
    )
