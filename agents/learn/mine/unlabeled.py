"""``mine_unlabeled``: questions without a known SQL → candidate knowledge, by the vote.

An unlabeled experience is a question someone asked (with the SQL the system answered then,
which nobody checked). It is mined only where the system is sure of its own answer: the
question is asked again with ``samples`` candidates (:class:`VoteThresholds`, default 5), and
the voted SQL is kept when

- enough samples ran (``min_ran``: a vote where most samples failed is no vote),
- the winning result holds at least ``min_share`` of the samples *asked for* (a vote a
  deadline cut short counts its missing samples against it),
- the answer's ``confidence`` is at least ``min_confidence`` (today the winning share of the
  samples drawn, see :mod:`agents.sql.vote`; a calibrated confidence when one exists),
- its result is not empty (``allow_empty``: an empty result that all samples agree on says
  little about which filter is right), and
- nobody marked an answer to the question wrong.

A kept question is mined like a labeled one (:func:`agents.learn.mine.labeled.mine_into`)
with the voted SQL, as miner ``unlabeled``: every entry records ``trust: "unlabeled"`` (the
source experience stays unlabeled and unverified; nothing mined from it is shown as
verified), and enters as a candidate like every mined entry.

Each vote is remembered on the experience (``metadata["vote"]``: the voted SQL, the share,
the confidence, samples asked and ran, distinct results, rows, the job), written every
``checkpoint`` questions: mining the log again, or a job run again after its worker died,
decides from the remembered vote (with the thresholds of *that* run) instead of asking
again, unless ``revote``. A vote with fewer samples than asked for now is asked again.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

from agents.answer import Answer
from agents.learn.mine.labeled import MiningReport, Progress, mine_into
from agents.learn.mine.pairer import Pairer
from agents.llm.base import Cancellation, LLMCancelledError, current_cancellation
from indices.normalize import Lemmatizer
from indices.string import StringIndex
from kb.errors import KnowledgeNotFoundError
from kb.store import KnowledgeStore
from kb.target.database import Database
from ukf import ExperienceUKF

MINER = "unlabeled"
VOTE = "vote"
VoteAsker = Callable[[ExperienceUKF, int], Answer]
"""Answers an experience's question with ``n`` samples, executed and not logged."""


@dataclass(frozen=True)
class VoteThresholds:
    """When a vote is sure enough to mine from (see the module docstring)."""

    samples: int = 5
    min_share: float = 0.8
    min_confidence: float = 0.8
    min_ran: int = 3
    allow_empty: bool = False

    def __post_init__(self) -> None:
        if not 1 <= self.samples <= 16:
            raise ValueError(f"samples must be between 1 and 16, got {self.samples}")
        for name in ("min_share", "min_confidence"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be within [0, 1], got {getattr(self, name)}")
        if not 1 <= self.min_ran <= self.samples:
            raise ValueError(f"min_ran must be between 1 and samples, got {self.min_ran}")


@dataclass(frozen=True)
class Vote:
    """What asking a question ``samples`` times gave."""

    sql: str | None
    share: float
    confidence: float
    samples: int
    ran: int
    distinct: int
    row_count: int
    error: str | None = None
    job_id: str | None = None
    at: str = ""

    @classmethod
    def of(cls, answer: Answer, samples: int, job_id: str | None) -> Vote:
        ran = [c for c in answer.candidates if c.ok]
        groups: dict[str, int] = {}
        for candidate in ran:
            key = candidate.fingerprint or candidate.sql
            groups[key] = groups.get(key, 0) + 1
        winners = max(groups.values(), default=0)
        return cls(
            sql=answer.sql if answer.executed else None,
            share=round(winners / samples, 4),
            confidence=round(answer.confidence, 4),
            samples=samples,
            ran=len(ran),
            distinct=len(groups),
            row_count=answer.row_count,
            error=answer.error,
            job_id=job_id,
            at=datetime.now(UTC).isoformat(timespec="seconds"),
        )

    @classmethod
    def remembered(cls, experience: ExperienceUKF) -> Vote | None:
        note = experience.metadata.get(VOTE)
        if not isinstance(note, dict):
            return None
        try:
            return cls(**{k: note[k] for k in cls.__dataclass_fields__ if k in note})
        except TypeError:  # an older or damaged note: vote again
            return None

    def refusal(self, thresholds: VoteThresholds) -> str | None:
        """Why this vote is not sure enough to mine from (None: it is)."""
        if self.sql is None:
            return f"the vote gave no answer: {self.error or 'no candidate ran'}"
        if self.ran < thresholds.min_ran:
            return f"too few samples ran: {self.ran}/{self.samples} (< {thresholds.min_ran})"
        if self.share < thresholds.min_share:
            return (
                f"low agreement: the winning result has {self.share:.2f} of {self.samples} "
                f"samples, {self.distinct} distinct results (< {thresholds.min_share})"
            )
        if self.confidence < thresholds.min_confidence:
            return f"low confidence: {self.confidence:.2f} (< {thresholds.min_confidence})"
        if self.row_count == 0 and not thresholds.allow_empty:
            return "the voted result is empty"
        return None


def unlabeled_experiences(
    store: KnowledgeStore, *, since: int | None = None, database: str | None = None
) -> list[ExperienceUKF]:
    """Active experiences with a question and neither a label nor a verification (written
    after store version ``since``)."""
    tags = {"DATABASE": database} if database else None
    found = [
        e
        for e in store.iterate(type="experience", tags=tags)
        if isinstance(e, ExperienceUKF) and not e.trusted and e.question
    ]
    if since is not None:
        recent = set(store.changes_since(since))
        found = [e for e in found if e.id in recent]
    return found


def mine_unlabeled(
    store: KnowledgeStore,
    experiences: Iterable[ExperienceUKF],
    *,
    ask: VoteAsker,
    thresholds: VoteThresholds | None = None,
    job_id: str | None = None,
    strings: StringIndex | None = None,
    lemmatizer: Lemmatizer | None = None,
    pairer: Pairer | None = None,
    targets: Mapping[str, Database] | None = None,
    databases: Iterable[str] | None = None,
    apply: bool = True,
    revote: bool = False,
    checkpoint: int = 10,
    progress: Progress | None = None,
    cancellation: Cancellation | None = None,
) -> MiningReport:
    """Vote on each experience's question, mine the sure ones (module docstring).

    Args:
        ask: answers a question with ``n`` samples (the pipeline, not logging it).
        thresholds: when a vote is sure enough (default :class:`VoteThresholds`).
        databases: the databases ``ask`` can answer on; an experience of another one is
            skipped (None: any).
        revote: ask again even where a vote is remembered.
        checkpoint: remember the votes every this many questions (and at the end).
        progress: called with (done, total) after each vote, then for the mining.
        cancellation: stops the votes (default: the current token, see
            :func:`agents.llm.base.cancellation_scope`); a question whose vote it stopped is
            not remembered (its failed samples are no vote), the others are, and
            :class:`LLMCancelledError` is raised with nothing mined.
        The other arguments are :func:`agents.learn.mine.mine_labeled`'s.
    """
    thresholds = thresholds or VoteThresholds()
    report = MiningReport(job_id or uuid.uuid4().hex[:12], miner=MINER)
    counts = {"asked": 0, "remembered": 0, "kept": 0, "refused": 0}
    refused: dict[str, int] = {}
    todo = list(experiences)
    answerable = set(databases) if databases is not None else None
    decided: list[tuple[ExperienceUKF, str | None]] = []
    fresh: dict[str, Vote] = {}
    token = cancellation if cancellation is not None else current_cancellation()
    try:
        for done, experience in enumerate(todo, 1):
            vote, reason = None, _unvotable(experience, answerable)
            if reason is None:
                vote = None if revote else Vote.remembered(experience)
                if vote is not None and vote.samples >= thresholds.samples:
                    counts["remembered"] += 1
                else:
                    _check(token)
                    answer = ask(experience, thresholds.samples)
                    _check(token)  # a vote stopped half-way is no vote
                    vote = Vote.of(answer, thresholds.samples, job_id)
                    fresh[experience.id] = vote
                    counts["asked"] += 1
                reason = vote.refusal(thresholds)
                refused_as = reason.split(":")[0] if reason else None
                if refused_as:
                    refused[refused_as] = refused.get(refused_as, 0) + 1
                counts["kept" if reason is None else "refused"] += 1
            decided.append((_as_voted(experience, vote) if reason is None else experience, reason))
            if apply and len(fresh) >= checkpoint:
                _remember(store, fresh)
            if progress is not None:
                progress(done, len(todo))
    except LLMCancelledError:
        if apply:
            _remember(store, fresh)  # what was voted stays voted; nothing is mined
        raise
    if apply:
        _remember(store, fresh)
    report.vote = {**counts, "refused_by": refused, "thresholds": asdict(thresholds)}
    return mine_into(
        store,
        decided,
        report,
        strings=strings,
        lemmatizer=lemmatizer,
        pairer=pairer,
        targets=targets,
        apply=apply,
    )


def _check(token: Cancellation | None) -> None:
    if token is not None:
        token.raise_if_cancelled("unlabeled mining")


def _unvotable(experience: ExperienceUKF, answerable: set[str] | None) -> str | None:
    if experience.trusted:
        return "labeled (mined by the labeled miner)"
    database = next(iter(experience.tag_values("DATABASE")), None)
    if database is None:
        return "no [DATABASE:...] tag"
    if answerable is not None and database not in answerable:
        return f"no target to ask on for database {database!r}"
    answers = experience.content_resources.get("answers") or {}
    if any(isinstance(a, dict) and a.get("verdict") == "wrong" for a in answers.values()):
        return "an answer to it was marked wrong"
    return None


def _as_voted(experience: ExperienceUKF, vote: Vote | None) -> ExperienceUKF:
    """The experience with the voted SQL to mine from (still unlabeled, never stored)."""
    assert vote is not None and vote.sql is not None
    resources = {**experience.content_resources, "sql": vote.sql, "labeled": False}
    voted = experience.clone(content_resources={**resources, "verified": False})
    assert isinstance(voted, ExperienceUKF) and voted.id == experience.id
    return voted


def _remember(store: KnowledgeStore, votes: dict[str, Vote]) -> None:
    """Write ``votes`` onto their experiences (read afresh: only ``metadata["vote"]``
    changes), then forget them."""
    if not votes:
        return
    current = store.get_many(list(votes))
    updated = [
        entry.clone(metadata={**entry.metadata, VOTE: asdict(votes[uid])})
        for uid, entry in current.items()
    ]
    store.upsert_many(updated)
    votes.clear()


def vote_of(store: KnowledgeStore, experience_id: str) -> Vote | None:
    """The vote remembered on an experience (None when none is, or it is unknown)."""
    try:
        entry = store.get(experience_id)
    except KnowledgeNotFoundError:
        return None
    return Vote.remembered(entry) if isinstance(entry, ExperienceUKF) else None


__all__ = [
    "MINER",
    "Vote",
    "VoteAsker",
    "VoteThresholds",
    "mine_unlabeled",
    "unlabeled_experiences",
    "vote_of",
]
