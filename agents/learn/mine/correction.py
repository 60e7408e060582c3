"""Atomic facts from a correction: what the corrected SQL says that the wrong one did not.

When an analyst marks an answer wrong and sends the SQL it should have been, both statements
are read as ASTs (:func:`agents.learn.mine.sql_facts.sql_facts`) and only the facts of the
corrected SQL that the wrong SQL lacks are learned: a column it should have read, a value or a
filter it should have applied, a join or a computation it should have used. Each is paired
with the question's phrase the way labeled mining pairs them
(:func:`agents.learn.mine.extract.mine_experience`: verbatim values, initials, shared word
stems, the optional LLM pairer), and, when exactly one differing value or column is left
unpaired (the question does not name it by itself) and exactly one run of question words is
left that nothing in the corrected SQL names (its tables, columns and values split the runs;
the filtered column's own words may stay in the phrase: "old continent" → ``continent =
'Europe'``), the two are paired with each other (``how="leftover"``: the words the system did
not understand are the ones the correction fixed). Only schema or people's phrases count as
known here: a word that mined knowledge covers may be the very word the wrong answer misread.

**Scope and visibility follow the correction** (:mod:`agents.experience_review`): facts take
the correction experience's workspace and owner. A private correction (owned by its asker,
pending agreement or review) gives facts owned by the asker, *active at once*: the asker's
next similar question retrieves them, nobody else's does (the store's visibility rules). When
the correction is shared (by agreement, by a reviewer, or at once for system feedback), the
shared copy is mined the same way into the shared layer (workspace, or global), active too:
the shared copy itself is an example everyone in that layer already retrieves. A rejected
correction stays private, and so do its facts.

Facts carry ``metadata["mining"]`` like every mined entry, with ``miner="correction"`` and
``trust="correction"``, the correction experience as ``parents``, and go through
:func:`kb.merge.merge_mined` with ``own_scope=True``: a fact in a user's layer overlays
broader knowledge of the same name for that user instead of deactivating it for everyone;
learning the same correction twice adds nothing.
"""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

from agents.learn.mine import entries
from agents.learn.mine.align import MAX_PHRASE_WORDS, STOPWORDS, QuestionView, name_lemmas
from agents.learn.mine.candidates import ACTIVE, CANDIDATE, activate, mining_note
from agents.learn.mine.extract import mine_experience
from agents.learn.mine.fact_diff import FactDiff, differing_facts, differs, fact_key
from agents.learn.mine.labeled import kind_of
from agents.learn.mine.pairer import Pairer
from agents.learn.mine.schema_view import SchemaView
from agents.learn.mine.sql_facts import (
    PredicateFact,
    SqlFacts,
    SqlFactsError,
    sql_facts,
)
from indices.normalize import Lemmatizer
from indices.string import StringIndex
from kb.merge import merge_mined
from kb.store import KnowledgeStore
from kb.target.sql_guard import sqlglot_dialect
from ukf import MINING_KEY, BaseUKF, ExperienceUKF

MINER = "correction"
TRUST = "correction"


@dataclass
class LearnedFact:
    """One fact learned from a correction, as the feedback response shows it."""

    id: str
    kind: str
    phrase: str
    description: str
    status: str
    scope: str
    action: str
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class CorrectionLearning:
    """What one correction taught: the facts (with their merge outcome), how many facts of the
    corrected SQL differ from the wrong SQL, how many of those found no phrase, or why the
    correction could not be read."""

    experience_id: str
    facts: list[LearnedFact] = field(default_factory=list)
    differing: int = 0
    unpaired: int = 0
    skipped: str | None = None


def layer_name(entry: BaseUKF) -> str:
    if entry.owner is not None:
        return "user"
    return "workspace" if entry.workspace is not None else "global"


def describe(entry: BaseUKF) -> str:
    """A short line saying what the fact means (``"settled" → orders.status = 'paid'``)."""
    r = entry.content_resources
    kind = kind_of(entry)
    if kind == "join":
        return entry.content
    target = r.get("condition") or r.get("formula") or r.get("target_name") or entry.content
    return f'"{entry.name}" → {target}'


class _Correction:
    """One correction experience being mined (see the module docstring)."""

    def __init__(
        self,
        store: KnowledgeStore,
        experience: ExperienceUKF,
        wrong_sql: str | None,
        job_id: str,
        strings: StringIndex | None,
        lemmatizer: Lemmatizer | None,
    ) -> None:
        self.store, self.experience, self.wrong_sql = store, experience, wrong_sql
        self.job_id, self.strings, self.lemmatizer = job_id, strings, lemmatizer
        self.dialect = sqlglot_dialect(str(experience.content_resources.get("dialect") or "sqlite"))
        self.database = next(iter(experience.tag_values("DATABASE")), "")
        self.out = CorrectionLearning(experience.id)

    def mine(self, pairer: Pairer | None) -> list[BaseUKF]:
        view = SchemaView(self.store, self.database)
        if not view.profiled or not self.experience.sql:
            self.out.skipped = f"database {self.database!r} is not profiled or no SQL"
            return []
        try:
            right = sql_facts(self.experience.sql, self.dialect)
        except SqlFactsError as exc:
            self.out.skipped = f"corrected SQL does not parse: {exc}"
            return []
        wrong = self._wrong_facts()
        diff = differing_facts(wrong, right, view)
        self.out.differing = len(diff)
        if not diff:
            return []
        mined = mine_experience(
            self.experience,
            view,
            job_id=self.job_id,
            miner=MINER,
            strings=self.strings,
            lemmatizer=self.lemmatizer,
            pairer=pairer,
            dialect=self.dialect,
        )
        kept = [e for e in mined.entries if differs(e, diff)]
        kept += self._leftover(kept, diff, right, view)
        return kept

    def _wrong_facts(self) -> SqlFacts | None:
        if not self.wrong_sql:
            return None
        try:
            return sql_facts(self.wrong_sql, self.dialect)
        except SqlFactsError:
            return None  # an unreadable wrong answer: every fact of the correction differs

    def _leftover(
        self, learned: list[BaseUKF], diff: FactDiff, right: SqlFacts, view: SchemaView
    ) -> list[BaseUKF]:
        """Pair the one differing value or column nothing named with the one run of question
        words nothing explains (see the module docstring)."""
        done = {fact_key(e) for e in learned}
        question = self._question()
        open_conditions = [
            c
            for c in diff.conditions
            if ("conditions", c) not in done and not _value_named(c, right, view, question)
        ]
        open_columns = [
            c
            for c in diff.columns
            if ("columns", c) not in done and not _column_named(view.columns[c], question)
        ]
        if len(open_conditions) + len(open_columns) != 1:
            self.out.unpaired = len(open_conditions) + len(open_columns)
            return []
        named = self._named_lemmas(learned, right)
        for column, _ in _values_of(open_conditions[0], right, view) if open_conditions else []:
            # "old continent" → continent = 'Europe': the filtered column's own words may
            # belong to the phrase that names its value
            named -= set(name_lemmas(column.name, self.lemmatizer))
        runs = [
            part
            for run in question.runs(across_known=True)
            for part in _split(run, [question.tokens[i].lemma in named for i in run])
        ]
        if len(runs) != 1 or len(runs[0]) > MAX_PHRASE_WORDS:
            self.out.unpaired = 1
            return []
        phrase = question.phrase(runs[0]).text
        prov = entries.Provenance(self.job_id, MINER, self.experience, self.database)
        if open_columns:
            column = view.columns[open_columns[0]]
            return [entries.synonym(phrase, column, entries.qualified(column), prov, "leftover")]
        condition = open_conditions[0]
        for column, value in _values_of(condition, right, view):
            enum = view.enum(column, value) if "LIKE" not in condition else None
            if enum is not None:
                return [entries.synonym(phrase, enum, condition, prov, "leftover")]
            return [entries.predicate(phrase, condition, column, prov, "leftover")]
        return []

    def _question(self) -> QuestionView:
        """The question with only schema or people's phrases as known: a word that mined
        knowledge covers may be the very word the wrong answer misread."""
        question = QuestionView(self.experience.question, self.strings, self.lemmatizer)
        ids = {uid for match in question.known for uid in match.ukf_ids}
        trusted = {uid for uid, e in self.store.get_many(ids).items() if e.is_authoritative}
        question.known = [m for m in question.known if trusted.intersection(m.ukf_ids)]
        question.covered = {
            i
            for i, token in enumerate(question.tokens)
            if any(m.start <= token.start and token.end <= m.end for m in question.known)
        }
        return question

    def _named_lemmas(self, learned: list[BaseUKF], right: SqlFacts) -> set[str]:
        """Lemmas of what the corrected SQL names by itself (tables, columns, values) and of
        the phrases already learned: a run holding one of them is explained."""
        words: list[str] = [e.name for e in learned]
        words += right.tables + [c for _, c in right.columns]
        words += [str(v) for p in right.predicates for v in p.values]
        return {lemma for w in words for lemma in name_lemmas(w, self.lemmatizer)}


def _values_of(condition: str, right: SqlFacts, view: SchemaView) -> list[tuple[BaseUKF, str]]:
    """The (column, value) pairs of ``right`` whose condition is ``condition``."""
    found: list[tuple[BaseUKF, str]] = []
    for pred in right.predicates:
        column = view.column(pred.table, pred.column, among=right.tables)
        if column is None or not pred.is_text:
            continue
        r = column.content_resources
        op = "=" if pred.op == "IN" else pred.op
        for value in map(str, pred.values):
            if PredicateFact(r["table"], r["column"], op, (value,), True).condition() == condition:
                found.append((column, value))
    return found


def _value_named(condition: str, right: SqlFacts, view: SchemaView, question: QuestionView) -> bool:
    """Whether the question names the value of ``condition`` itself (verbatim or by its
    initials): then no other words of the question stand for it."""
    for _, value in _values_of(condition, right, view):
        words = value.strip("%")
        if question.find_value(words) or question.find_initials(words):
            return True
    return False


def _column_named(column: BaseUKF, question: QuestionView) -> bool:
    """Whether the question names ``column`` already: a known phrase of it, or its own
    words."""
    if any(column.id in match.ukf_ids for match in question.known):
        return True
    own = set(name_lemmas(column.name, question.lemmatizer)) - STOPWORDS
    return bool(own) and own <= {t.lemma for t in question.tokens}


def _split(run: list[int], named: list[bool]) -> list[list[int]]:
    """The stretches of ``run`` between the words the SQL names by themselves."""
    parts: list[list[int]] = [[]]
    for index, is_named in zip(run, named, strict=True):
        if is_named:
            parts.append([])
        else:
            parts[-1].append(index)
    return [part for part in parts if part]


def _as_correction(entry: BaseUKF, active: bool) -> BaseUKF:
    note = {**mining_note(entry), "trust": TRUST, "status": ACTIVE if active else CANDIDATE}
    return entry.clone(inactive_mark=not active, metadata={**entry.metadata, MINING_KEY: note})


def learn_from_correction(
    store: KnowledgeStore,
    experience: ExperienceUKF,
    *,
    wrong_sql: str | None = None,
    job_id: str | None = None,
    strings: StringIndex | None = None,
    lemmatizer: Lemmatizer | None = None,
    pairer: Pairer | None = None,
    active: bool = True,
) -> CorrectionLearning:
    """Mine the facts ``experience`` (a correction: its SQL is the corrected one) shows that
    ``wrong_sql`` (default: the answered SQL its feedback note keeps) lacks, into ``store``.

    Args:
        store: the store holding the profiled schema; receives the facts.
        experience: the labeled experience the correction became (private or shared copy).
        wrong_sql: the SQL the answer had (None: ``content_resources["feedback"]
            ["answered_sql"]``; missing there too: every fact of the correction differs).
        job_id: recorded in each fact's provenance (default: a fresh id).
        strings: the string index (phrases it knows cover question words); None: none.
        lemmatizer: the lemmatiser of ``strings``.
        pairer: pairs phrases the deterministic alignment leaves (None: the leftover rule).
        active: facts usable at once in the correction's scope (False: candidates).
    """
    if wrong_sql is None:
        note = experience.content_resources.get("feedback")
        wrong_sql = note.get("answered_sql") if isinstance(note, dict) else None
    work = _Correction(
        store, experience, wrong_sql, job_id or uuid.uuid4().hex[:12], strings, lemmatizer
    )
    facts = [_as_correction(e, active) for e in work.mine(pairer)]
    if not facts:
        return work.out
    merged = merge_mined(store, facts, include_inactive=True, own_scope=True)
    by_id = {f.id: f for f in facts}
    reuse = [d.existing_id for d in merged.of("merged") if d.existing_id]
    activated = set(activate(store, reuse, by=MINER)) if active and reuse else set()
    for decision in merged.decisions:
        fact = by_id.get(decision.ukf_id)
        if fact is None:
            continue  # an earlier entry the merge deactivated; its decision says so
        stored_id = decision.existing_id if decision.action == "merged" else fact.id
        status = _status_of(store, stored_id or fact.id, decision.action, activated)
        work.out.facts.append(
            LearnedFact(
                id=stored_id or fact.id,
                kind=kind_of(fact),
                phrase=fact.name,
                description=describe(fact),
                status=status,
                scope=layer_name(fact),
                action=decision.action,
                reason=decision.reason,
            )
        )
    return work.out


def _status_of(store: KnowledgeStore, ukf_id: str, action: str, activated: set[str]) -> str:
    if action in ("dropped", "discarded"):
        return action
    if ukf_id in activated:
        return ACTIVE
    found = store.get_many([ukf_id]).get(ukf_id)
    if found is None:
        return action
    if not found.inactive_mark:
        return ACTIVE
    return str(mining_note(found).get("status") or "inactive")
