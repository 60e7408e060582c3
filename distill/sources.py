"""Which experiences teach a student, where each came from, and what it carries.

Three sources, from most to least trusted:

- ``human``: labeled or verified by a person (feedback, imported worked examples, a
  reviewer), not made by synthesis;
- ``mined``: an unlabeled question whose vote (``metadata["vote"]``, written by
  :mod:`agents.learn.mine.unlabeled`) was sure enough to mine from: the voted SQL is the
  target, and the vote share is the teacher's agreement;
- ``synthetic``: a pair made by :mod:`agents.learn.synth` (verified by its back-check).

:func:`experience_cot` is the small accessor for a stored chain of thought: the passing
CoT-profiling record about the experience's current SQL (``profile["cot"]``, see
``agents/learn/cot``) first, else the reasoning the experience itself stores
(``content_resources["cot"]``), else None.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from agents.learn.cot.record import COT, sql_hash
from agents.learn.mine.unlabeled import VOTE, VoteThresholds
from agents.learn.synth.records import is_synthetic
from kb.store import KnowledgeStore
from ukf import ExperienceUKF

SourceName = Literal["human", "mined", "synthetic"]
SOURCES: tuple[SourceName, ...] = ("human", "mined", "synthetic")
__all__ = ["COT", "TeachingExample", "experience_cot", "sql_hash", "teaching_examples"]


@dataclass(frozen=True)
class TeachingExample:
    """One experience that can become a training tuple.

    Attributes:
        experience: the stored experience.
        database: its ``[DATABASE:...]`` name.
        source: human, mined or synthetic.
        sql: the target SQL (the voted SQL for a mined question).
        vote_share: the teacher's agreement when a vote is recorded (None otherwise).
        cot: the stored chain of thought (None when none is stored).
        cot_checked: True when a CoT check passed, False when it failed, None when none ran.
    """

    experience: ExperienceUKF
    database: str
    source: SourceName
    sql: str
    vote_share: float | None = None
    cot: str | None = None
    cot_checked: bool | None = None

    @property
    def question(self) -> str:
        return self.experience.question

    @property
    def dialect(self) -> str:
        return self.experience.content_resources.get("dialect") or "sqlite"


def cot_record(entry: ExperienceUKF, sql: str) -> dict[str, Any] | None:
    """The CoT-profiling record about ``sql`` stored on ``entry`` (passing or not): for a
    mined question the voted SQL, which need not be the SQL the experience stores, so
    :func:`agents.learn.cot.record.cot_record` (about the stored SQL) is not used."""
    record = entry.profile.get(COT)
    if not isinstance(record, dict) or record.get("sql_hash") != sql_hash(sql):
        return None
    return record


def experience_cot(entry: ExperienceUKF, sql: str) -> tuple[str | None, bool | None]:
    """(CoT text, whether a check passed) for ``entry`` answered by ``sql`` (module doc)."""
    record = cot_record(entry, sql)
    if record is not None:
        if not record.get("passed"):
            return None, False
        text = record.get("text")
        steps = record.get("steps")
        if not text and isinstance(steps, list):
            text = " ".join(str(s) for s in steps)
        return (" ".join(str(text).split()) or None), True
    stored = entry.content_resources.get("cot")
    if isinstance(stored, str) and stored.strip():
        return " ".join(stored.split()), None
    return None, None


def source_of(entry: ExperienceUKF, thresholds: VoteThresholds | None = None) -> SourceName | None:
    """The source of ``entry`` (module doc), or None when it cannot teach."""
    if is_synthetic(entry):
        return "synthetic" if (entry.labeled or entry.verified) and entry.sql else None
    if (entry.labeled or entry.verified) and entry.sql:
        return "human"
    vote = entry.metadata.get(VOTE)
    if isinstance(vote, dict) and vote.get("sql") and _sure(vote, thresholds or VoteThresholds()):
        return "mined"
    return None


def _sure(vote: dict[str, Any], thresholds: VoteThresholds) -> bool:
    return (
        float(vote.get("share") or 0) >= thresholds.min_share
        and float(vote.get("confidence") or 0) >= thresholds.min_confidence
        and int(vote.get("ran") or 0) >= thresholds.min_ran
        and not vote.get("error")
        and (thresholds.allow_empty or int(vote.get("row_count") or 0) > 0)
    )


def teaching_example(
    entry: ExperienceUKF, thresholds: VoteThresholds | None = None
) -> TeachingExample | None:
    """``entry`` as a :class:`TeachingExample` (None when it cannot teach, or it is inactive,
    has no database, or belongs to a user or a workspace: a student every user asks must
    not learn one analyst's private or planted correction)."""
    source = source_of(entry, thresholds)
    database = next(iter(entry.tag_values("DATABASE")), None)
    if source is None or database is None or entry.inactive_mark:
        return None
    if entry.owner is not None or entry.workspace is not None:
        return None
    vote = entry.metadata.get(VOTE)
    vote = vote if isinstance(vote, dict) else None
    sql = str(vote["sql"] if source == "mined" and vote else entry.sql).strip().rstrip(";")
    share = float(vote["share"]) if vote and vote.get("share") is not None else None
    cot, checked = experience_cot(entry, sql)
    return TeachingExample(entry, database, source, sql, share, cot, checked)


def teaching_examples(
    store: KnowledgeStore,
    databases: Iterable[str] | None = None,
    thresholds: VoteThresholds | None = None,
) -> list[TeachingExample]:
    """Every experience of ``databases`` (all when None) that can teach, by id."""
    wanted = None if databases is None else set(databases)
    found = []
    for entry in store.iterate(type="experience"):
        if not isinstance(entry, ExperienceUKF):
            continue
        example = teaching_example(entry, thresholds)
        if example is not None and (wanted is None or example.database in wanted):
            found.append(example)
    return sorted(found, key=lambda e: e.experience.id)
