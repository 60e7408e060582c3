"""The state one experience's mining keeps between its steps (:mod:`agents.learn.mine.extract`).

:class:`MinerState` holds the experience's SQL facts, the schema view, the question's phrases
and what was emitted, claimed and named so far, with the helpers each step uses (a column of
the SQL found in the profile, an entry emitted once, an element parked for the pairer);
:class:`ExperienceMining` is what mining one experience gave.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from agents.learn.mine import entries
from agents.learn.mine.align import Phrase, QuestionView, name_lemmas
from agents.learn.mine.pairer import PairItem
from agents.learn.mine.schema_view import SchemaView
from agents.learn.mine.sql_facts import ColumnRef, PredicateFact, SqlFacts
from ukf import BaseUKF, ExperienceUKF

VALUE_OPS = frozenset({"=", "IN", "LIKE"})


def phrase_key(text: str) -> str:
    return " ".join(text.casefold().split())


@dataclass
class ExperienceMining:
    """What mining one experience gave: entries, or why it was skipped; drops by reason."""

    experience_id: str
    entries: list[BaseUKF] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)
    known: int = 0
    unpaired: int = 0
    unchecked_values: int = 0
    skipped: str | None = None


@dataclass
class Pending:
    """An element left for the pairer: its item, target entry and what it needs."""

    item: PairItem
    target: BaseUKF
    extra: list[BaseUKF] = field(default_factory=list)
    condition: str = ""
    value: str = ""


class MinerState:
    """What mining one experience keeps while its steps run (:mod:`agents.learn.mine.extract`):
    the facts, the schema view, the question's phrases, what was emitted, claimed and named,
    and the elements left for the pairer; with the helpers every step uses."""

    def __init__(
        self,
        experience: ExperienceUKF,
        facts: SqlFacts,
        view: SchemaView,
        question: QuestionView,
        prov: entries.Provenance,
    ) -> None:
        self.experience, self.facts, self.view = experience, facts, view
        self.q, self.prov = question, prov
        self.out = ExperienceMining(experience.id)
        self.pending: list[Pending] = []
        self.known_ids = {uid for match in question.known for uid in match.ukf_ids}
        self._unknown_columns: set[ColumnRef] = set()
        self.claimed: set[PredicateFact] = set()  # read as a period or a comparison
        self.named: set[str] = set()  # columns a period or a comparison entry names

    # ------------------------------------------------------------------ helpers
    def column(self, ref: ColumnRef) -> BaseUKF | None:
        found = self.view.column(ref[0], ref[1], among=self.facts.tables)
        if found is None and ref not in self._unknown_columns:
            self._unknown_columns.add(ref)
            self.out.dropped["unknown_column"] += 1
        return found

    def emit(self, entry: BaseUKF, phrase: Phrase | None = None) -> None:
        if phrase is not None:
            self.q.claim(phrase)
        if all(e.id != entry.id for e in self.out.entries):
            self.out.entries.append(entry)

    def park(
        self,
        kind: str,
        label: str,
        target: BaseUKF,
        *,
        extra: list[BaseUKF] | None = None,
        condition: str = "",
        value: str = "",
    ) -> None:
        """Leave an element for the pairer (item keys ``i1``, ``i2``... in order)."""
        item = PairItem(f"i{len(self.pending) + 1}", kind, label, target.description[:120])
        self.pending.append(Pending(item, target, list(extra or []), condition, value))

    def is_own_name(self, phrase: Phrase, name: str) -> bool:
        return phrase.lemmas == name_lemmas(name, self.q.lemmatizer)
