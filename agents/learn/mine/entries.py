"""UKF entries for mined facts, each a candidate with its provenance.

One builder per kind of fact:

- ``synonym``: a phrase → a column, a table or an enum value (:class:`ukf.SynonymUKF`);
- ``predicate``: a phrase → a filter on a column whose values are not profiled as enums
  (:class:`ukf.PredicateUKF`, ``uses_column``);
- ``metric``: a phrase → a formula (:class:`ukf.MetricUKF`, ``uses_column``);
- ``join``: a join two tables were actually joined by, with no declared foreign key
  (:class:`ukf.KnowledgeUKF` carrying a ``joins`` relation *from the left table to the right
  one*, which the graph index reads as a join edge: ``GraphIndex.join_path`` then walks it);
- ``period``: a time phrase → the date filter (a predicate with ``period`` resources; a
  relative phrase says its days relative to the query time and carries the ``calendar`` fact
  the RAG resolves it with);
- ``comparison``: a unit or comparative phrase → a numeric column compared with the number
  the question gives (a predicate with ``comparison`` resources, no constant);
- ``preference``: a habitual filter of a user, a workspace or a profile (a rule with
  ``preference`` resources, scoped by owner, workspace or a ``user_profile_match`` trigger).

Every entry has ``source="auto"``, the source experience as ``parents``, the experience's
scope (workspace, owner), the database tag, and ``metadata["mining"]`` (job, miner, trust,
how the phrase was paired): see :mod:`agents.learn.mine.candidates`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agents.learn.mine.candidates import CANDIDATE
from ukf import (
    MINING_KEY,
    BaseUKF,
    ExperienceUKF,
    KnowledgeUKF,
    MetricUKF,
    PredicateUKF,
    RuleUKF,
    SynonymUKF,
)
from ukf.relations import Related

if TYPE_CHECKING:
    from agents.learn.mine.templates import Slot

MINER_VERSION = 1
MINED_COLLECTION = "semantics"


@dataclass(frozen=True)
class Provenance:
    """Where a mined entry comes from: the job, the miner, the source experience."""

    job_id: str
    miner: str
    experience: ExperienceUKF
    database: str
    others: Sequence[ExperienceUKF] = field(default=())  # further sources (preferences)

    @property
    def trust(self) -> str:
        if self.experience.verified:
            return "verified"
        return "labeled" if self.experience.labeled else "unlabeled"

    def fields(self, how: str) -> dict[str, Any]:
        """Constructor fields every mined entry shares."""
        note = {
            "status": CANDIDATE,
            "job_id": self.job_id,
            "miner": self.miner,
            "miner_version": MINER_VERSION,
            "trust": self.trust,
            "how": how,
        }
        return {
            "source": "auto",
            "parents": [self.experience.id, *(e.id for e in self.others)],
            "workspace": self.experience.workspace,
            "owner": self.experience.owner,
            "inactive_mark": True,
            "metadata": {MINING_KEY: note},
        }


def phrase_name(text: str) -> str:
    """A phrase as an entry name: lower case, except acronyms ("NC")."""
    folded = " ".join(text.split())
    return folded if folded.isupper() else folded.lower()


def qualified(entry: BaseUKF) -> str:
    r = entry.content_resources
    return f"{r['table']}.{r['column']}" if r.get("column") else str(r.get("table", entry.name))


def synonym(phrase: str, target: BaseUKF, label: str, prov: Provenance, how: str) -> SynonymUKF:
    return SynonymUKF.create(
        phrase_name(phrase),
        target,
        target_name=label,
        database=prov.database,
        collection=MINED_COLLECTION,
        **prov.fields(how),
    )


def predicate(
    phrase: str, condition: str, column: BaseUKF, prov: Provenance, how: str
) -> PredicateUKF:
    return PredicateUKF.create(
        phrase_name(phrase),
        condition,
        database=prov.database,
        columns=[column],
        **prov.fields(how),
    )


def metric(
    phrase: str, formula: str, columns: list[BaseUKF], prov: Provenance, how: str
) -> MetricUKF:
    return MetricUKF.create(
        phrase_name(phrase),
        formula,
        database=prov.database,
        columns=columns,
        **prov.fields(how),
    )


def join(
    left: BaseUKF, left_column: str, right: BaseUKF, right_column: str, prov: Provenance
) -> KnowledgeUKF:
    """``left.left_column = right.right_column`` as knowledge with a ``joins`` edge."""
    lname, rname = left.content_resources["table"], right.content_resources["table"]
    condition = f"{lname}.{left_column} = {rname}.{right_column}"
    edge = Related(
        subject=left.id,
        relation="joins",
        object=right.id,
        resources={"columns": [left_column], "ref_columns": [right_column], "mined": True},
    )
    return KnowledgeUKF.create(
        f"join {condition}",
        f"Join {lname} and {rname} on {condition}.",
        database=prov.database,
        collection=MINED_COLLECTION,
        content_resources={
            "kind": "join",
            "left_table": lname,
            "left_columns": [left_column],
            "right_table": rname,
            "right_columns": [right_column],
        },
        related=[edge],
        **prov.fields("sql"),
    )


def period(
    phrase: str,
    condition: str,
    column: BaseUKF,
    resources: dict[str, Any],
    prov: Provenance,
    *,
    description: str = "",
) -> PredicateUKF:
    """A time phrase → its date filter; ``resources``: the ``period`` facts (and a
    ``calendar`` fact for a relative phrase)."""
    return PredicateUKF.create(
        phrase_name(phrase),
        condition,
        database=prov.database,
        columns=[column],
        description=description,
        content_resources=resources,
        **prov.fields("period"),
    )


def comparison(
    phrase: str,
    condition: str,
    column: BaseUKF,
    resources: dict[str, Any],
    prov: Provenance,
    *,
    description: str = "",
) -> PredicateUKF:
    """A unit or comparative phrase → a numeric column compared with the question's number."""
    return PredicateUKF.create(
        phrase_name(phrase),
        condition,
        database=prov.database,
        columns=[column],
        description=description,
        content_resources={"comparison": resources},
        **prov.fields("comparison"),
    )


def preference(
    name: str,
    content: str,
    resources: dict[str, Any],
    prov: Provenance,
    *,
    scope: str,
    owner: str | None = None,
    workspace: str | None = None,
    triggers: dict[str, dict[str, Any]] | None = None,
    description: str = "",
) -> RuleUKF:
    """A habitual filter as an intent rule of ``scope`` (the variant keeps scopes apart)."""
    fields = prov.fields("habit")
    fields.update(owner=owner, workspace=workspace)
    return RuleUKF.create(
        name,
        content,
        kind="intent",
        database=prov.database,
        collection=MINED_COLLECTION,
        variant=scope,
        triggers=dict(triggers or {}),
        description=description,
        content_resources={"preference": resources},
        **fields,
    )


def template(
    key: str,
    slots: Sequence[Slot],
    shown: str,
    dialect: str,
    prov: Provenance,
    sketches: Sequence[str],
    support: dict[str, Any],
) -> KnowledgeUKF:
    """A query template: ``key`` (the slotted SQL, what the answering step fills) and its
    ``slots``; ``shown``, the key with ``'<table.column>'`` for each slot, is its name and
    text (what a prompt shows when the retriever brings the entry in). Name, content and
    resources depend on the key alone (mining more supporters merges into the same entry, as
    new parents); ``metadata["template"]`` keeps ``support`` (the count and the supporters'
    ids) and the questions' sketches as mined."""
    fields = prov.fields("template")
    fields["metadata"]["template"] = {**support, "questions": [*sketches]}
    return KnowledgeUKF.create(
        f"query template {shown}",
        "Labeled questions of one shape are answered by this SQL, with the question's own "
        f"value in place of each '<table.column>': {shown}",
        database=prov.database,
        collection=MINED_COLLECTION,
        content_resources={
            "kind": "template",
            "sql": key,
            "dialect": dialect,
            "slots": [slot.to_dict() for slot in slots],
        },
        **fields,
    )
