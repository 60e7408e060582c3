"""The knowledge behind a SQL's implicit filters, for the CoT writer.

A verified SQL often filters on what its question never says: the reporting rule's default
(``caliber = 'A'``), a metric's definition (``report_item_level1 = 'Revenue'`` for
"revenue"), a business term's condition (``channel IN ('Retail Store', 'Kiosk')`` for
"retail"), a synonym's value (``model_code = 'NV100'`` for "Sprite"). A writer shown only the
question and the SQL cannot tie such a filter to any words, so it skips it and the
explanation fails the checker. :class:`CotKnowledgeLookup` finds, for each filter whose
column or values the question does not name, the knowledge entries of the database
that state that filter: rules, metrics, predicates and glossary entries that name its
column and give each of its values (numbers included: a filter no entry states gets none),
and synonyms whose phrase the question uses. The writer
shows them to the model (each with its name, which the checker then accepts in quotes) and
the CoT record keeps their ids.

Off by default (``profile_cot(with_knowledge=True)``, ``--cot-with-knowledge``): with the
1.5B as teacher, AutoFin's 61 explained SQL passed the checker 16 times with the knowledge
shown against 23 without (the model copied the entries' words, ``REV_VEH`` or "rule", into
its steps, names the checker refuses).

An entry *gives* a value when the value occurs in its text as a whole word, case-sensitively;
a value of one or two characters (``'A'``) only quoted or after ``=``, so that English words
("A management view") do not count.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from agents.learn.cot.sql_parts import SqlParts
from kb.store import KnowledgeStore
from ukf import BaseUKF

KINDS = ("rule", "metric", "predicate", "knowledge", "synonym")
"""The entry types that can explain a filter (synonyms only when the question uses them)."""
_KIND_RANK = {"metric": 0, "predicate": 0, "synonym": 0, "rule": 1, "knowledge": 2}
PER_FILTER = 2
"""Entries shown for one filter at most."""
MAX_SHOWN = 5
"""Entries shown for one SQL at most."""
TEXT_CHARS = 280


@dataclass(frozen=True)
class CotKnowledge:
    """One entry shown to the writer: its ``id``, ``kind`` (UKF type), ``name``, the
    one-line ``text`` it is shown with, and the ``phrases`` (name, synonyms) the checker
    accepts quoted."""

    id: str
    kind: str
    name: str
    text: str
    phrases: tuple[str, ...]

    @property
    def line(self) -> str:
        """How the prompt lists it: ``rule "Name": text``."""
        return f'{self.kind} "{self.name}": {self.text}'


@dataclass(frozen=True)
class _Entry:
    knowledge: CotKnowledge
    body: str  # what it says, searched for columns and values


class CotKnowledgeLookup:
    """The knowledge of ``store`` behind a SQL's implicit filters (module docstring); the
    entries of each database are read once per lookup object (one CoT run)."""

    def __init__(self, store: KnowledgeStore) -> None:
        self.store = store
        self._entries: dict[str, list[_Entry]] = {}

    def for_sql(self, question: str, parts: SqlParts, database: str | None) -> list[CotKnowledge]:
        """The entries that state the filters of ``parts`` which ``question`` does not
        name, best first (at most :data:`PER_FILTER` a filter, :data:`MAX_SHOWN` in all)."""
        if database is None:
            return []
        entries = self._database_entries(database)
        asked = question.lower()
        shown: dict[str, CotKnowledge] = {}
        for _sql, columns, literals in parts.filters:
            values = [str(v) for v in literals]
            if not columns or not _implicit(asked, columns, values):
                continue
            found = [
                (_rank(entry, asked, values), entry.knowledge)
                for entry in entries
                if _states(entry, columns, values, asked)
            ]
            for _score, knowledge in sorted(found, key=lambda pair: pair[0])[:PER_FILTER]:
                shown.setdefault(knowledge.id, knowledge)
        return list(shown.values())[:MAX_SHOWN]

    def _database_entries(self, database: str) -> list[_Entry]:
        if database not in self._entries:
            found = self.store.iterate(type=list(KINDS), tags={"DATABASE": database})
            self._entries[database] = [_entry(e) for e in found]
        return self._entries[database]


def knowledge_phrases(knowledge: Iterable[CotKnowledge]) -> list[str]:
    """Every phrase (name, synonym) of ``knowledge``: the checker accepts them quoted."""
    return [phrase for k in knowledge for phrase in k.phrases]


def _entry(entry: BaseUKF) -> _Entry:
    resources = entry.content_resources
    said = [str(resources.get(key) or "") for key in ("formula", "condition", "target_name")]
    parts: list[str] = []
    for part in (entry.content, *said, entry.description):
        if part.strip() and not any(part.strip() in kept for kept in parts):
            parts.append(part.strip())
    body = " ".join(parts)
    text = " ".join(body.split())
    if len(text) > TEXT_CHARS:
        text = text[: TEXT_CHARS - 1].rstrip() + "…"
    phrases = tuple(dict.fromkeys(p for p in (entry.name, *entry.synonyms) if p))
    knowledge = CotKnowledge(entry.id, entry.type, entry.name, text, phrases)
    return _Entry(knowledge, body)


def _implicit(asked: str, columns: list[str], values: list[str]) -> bool:
    """The question does not name both the filter's column and each of its values (one of
    them is left for the knowledge to explain)."""
    column_named = any(_said_in(asked, c) for c in columns)
    values_named = all(_phrase_in(asked, v.strip("%")) for v in values)
    return not (column_named and values_named)


def _states(entry: _Entry, columns: list[str], values: list[str], asked: str) -> bool:
    """``entry`` names one of the filter's ``columns`` and gives each of its ``values``;
    a synonym also needs its phrase in the question."""
    if entry.knowledge.kind == "synonym" and not any(
        _phrase_in(asked, p) for p in entry.knowledge.phrases
    ):
        return False
    lower = entry.body.lower()
    if not any(_word_in(lower, c.lower()) for c in columns):
        return False
    return all(_gives(entry.body, v) for v in values)


def _gives(body: str, value: str) -> bool:
    value = value.strip("%")
    if not value:
        return True
    if len(value) <= 2:
        quoted = rf"'{re.escape(value)}'|\"{re.escape(value)}\"|=\s*{re.escape(value)}(?![\w])"
        return bool(re.search(quoted, body))
    return _word_in(body, value)


def _rank(entry: _Entry, asked: str, values: list[str]) -> tuple[int, int, int, int]:
    """Entries the question calls by name first, then those named as the filter's value
    (the metric "Revenue" for ``= 'Revenue'``), then metrics, predicates and synonyms, then
    rules, then glossary entries; the shorter (more specific) first."""
    knowledge = entry.knowledge
    called = any(_phrase_in(asked, p) for p in knowledge.phrases)
    named = knowledge.name.lower() in {v.strip("%").lower() for v in values}
    kind = _KIND_RANK.get(knowledge.kind, 3)
    return (0 if called else 1, 0 if named else 1, kind, len(entry.body))


def _phrase_in(asked: str, phrase: str) -> bool:
    key = phrase.lower().strip()
    return bool(key) and _word_in(asked, key)


def _word_in(text: str, words: str) -> bool:
    """``words`` occur in ``text`` as whole words (case as given)."""
    return re.search(rf"(?<![\w]){re.escape(words)}(?![\w])", text) is not None


def _said_in(asked: str, column: str) -> bool:
    """``column`` (or its words: ``report_item_level1`` → "report item level1") is in the
    question."""
    words = " ".join(w for w in re.split(r"[_\s]+", column.lower()) if w)
    return any(_phrase_in(asked, form) for form in {column.lower(), words})
