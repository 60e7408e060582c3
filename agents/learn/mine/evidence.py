"""Weighing a mined phrase against every labeled question that says it.

One experience shows that *its* question named a column so; the log shows whether the
phrase means that column in general. :func:`screen` looks, for each mined phrase entry
(synonym, predicate, metric, comparison), at the labeled questions of its database that
say the phrase (lemmas, as :func:`agents.learn.mine.usage.says` reads them) in its scope (the same
workspace and owner, plus the global questions a scope inherits: the merge keeps the facts
of other scopes apart) and counts
those whose SQL uses what the entry points to (*support*) and those whose SQL does not
(*against*). An entry is dropped, and counted by its reason, when:

- ``ambiguous_phrase``: the phrase was mined for several elements ("people" →
  ``state.population`` in questions about states, ``city.population`` in questions about
  cities) and this element holds less than :data:`MIN_SHARE_AMBIGUOUS` of the questions
  saying it; a synonym is then scoped, where the log allows, by the word next to its
  phrase in its question (:func:`narrowed`: "how high" → ``highest_elevation``);
- ``conflicting_evidence``: the phrase is said more often than :data:`MIN_SHARE` allows by
  questions whose SQL does not use the element ("high" → ``highest_elevation`` while most
  questions saying "highest" ask for ``highest_point``);
- ``low_support``: a synonym or a predicate whose phrase was only paired by a weak
  alignment (a shared four-letter prefix: "elevated" ↔ ``highest_elevation``) and that
  fewer than :data:`MIN_SUPPORT` questions support. An exact alignment (a value said
  verbatim or by its initials, a phrase sharing a whole word with the element's name) needs
  one; so does a pairing the LLM pairer made, having read the question and its SQL.

Joins, periods and preferences are judged elsewhere (values shared by the two columns;
the calendar; habits).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from agents.learn.mine import entries as build
from agents.learn.mine.align import STOPWORDS, name_lemmas
from agents.learn.mine.candidates import mining_note
from agents.learn.mine.schema_view import SchemaView
from agents.learn.mine.usage import Element, SqlUse, element_of, kind_of, lemmas_of
from indices.normalize import Lemmatizer, tokenize
from ukf import BaseUKF, ExperienceUKF

MIN_SUPPORT = 2
MIN_SHARE = 0.6
MIN_SHARE_AMBIGUOUS = 0.8  # a phrase mined for several elements: one must clearly lead
NARROWED = frozenset({"ambiguous_phrase", "conflicting_evidence"})
SCOPING_STOPWORDS = frozenset({"how"})  # "how high": a degree, not a point
EXACT_HOW = frozenset({"verbatim", "initials", "llm"})
SUPPORTED_KINDS = frozenset({"column_synonym", "table_synonym", "value_synonym", "predicate"})
JUDGED_KINDS = SUPPORTED_KINDS | {"metric", "comparison"}


Scope = tuple[str, str | None, str | None]  # database, workspace, owner


def scope_of(entry: BaseUKF, database: str | None = None) -> Scope:
    """The scope facts are weighed in: the merge keeps other scopes' facts apart."""
    if database is None:
        database = next(iter(entry.tag_values("DATABASE")), "")
    return database, entry.workspace, entry.owner


@dataclass(frozen=True)
class Weight:
    """How the labeled questions saying an entry's phrase judge it."""

    support: int
    against: int

    @property
    def share(self) -> float:
        said = self.support + self.against
        return self.support / said if said else 1.0


class Evidence:
    """The labeled questions of each database, read once (lemmas and what their SQL uses)."""

    def __init__(
        self,
        experiences: Iterable[ExperienceUKF],
        views: Mapping[str, SchemaView],
        lemmatizer: Lemmatizer | None = None,
    ) -> None:
        self.lemmatizer = lemmatizer
        self.uses: dict[Scope, list[SqlUse]] = defaultdict(list)
        self.experiences: dict[str, ExperienceUKF] = {}
        self.elements: dict[str, BaseUKF] = {}  # tables and columns by id
        self.columns: dict[str, tuple[str, str]] = {}
        seen: set[str] = set()
        for experience in experiences:
            database = next(iter(experience.tag_values("DATABASE")), "")
            view = views.get(database)
            if view is None or not experience.sql or experience.id in seen:
                continue
            seen.add(experience.id)
            self.experiences[experience.id] = experience
            dialect = str(experience.content_resources.get("dialect") or "sqlite")
            use = SqlUse(experience.question, experience.sql, view, lemmatizer, dialect=dialect)
            if use.parsed:
                self.uses[scope_of(experience, database)].append(use)
        for view in views.values():
            self.elements.update((t.id, t) for t in view.tables.values())
            self.elements.update((c.id, c) for c in view.columns.values())
            for column in view.columns.values():
                r = column.content_resources
                self.columns[column.id] = (str(r["table"]).casefold(), str(r["column"]).casefold())

    def weigh(self, scope: Scope, element: Element, phrase: tuple[str, ...]) -> Weight:
        """Over the questions of ``scope`` and, for a workspace or a user, the global ones
        of its database (which the scope inherits)."""
        shared = (scope[0], None, None)
        uses = self.uses.get(scope, []) + (self.uses.get(shared, []) if scope != shared else [])
        verdicts = [u.judge(element, phrase) for u in uses]
        return Weight(verdicts.count(True), verdicts.count(False))


def screen(entries: list[BaseUKF], evidence: Evidence) -> tuple[list[BaseUKF], Counter[str]]:
    """The entries the evidence keeps, and the drops by reason (one per distinct fact)."""
    elements: dict[tuple[Scope, tuple[str, ...]], set[Element]] = defaultdict(set)
    judged: dict[tuple[str, str], tuple[str, Scope, Element, tuple[str, ...]]] = {}
    firsts: dict[tuple[str, str], BaseUKF] = {}
    for entry in entries:
        kind = kind_of(entry)
        element = element_of(entry, evidence.columns) if kind in JUDGED_KINDS else None
        if element is None:
            continue
        scope = scope_of(entry)
        phrase = lemmas_of(entry.name, evidence.lemmatizer)
        judged[_key(entry)] = (kind, scope, element, phrase)
        firsts.setdefault(_key(entry), entry)
        elements[(scope, phrase)].add(element)
    verdicts: dict[tuple[str, str], str | None] = {}
    for key, (kind, scope, element, phrase) in judged.items():
        weight = evidence.weigh(scope, element, phrase)
        rivals = elements[(scope, phrase)]
        verdicts[key] = _verdict(firsts[key], kind, weight, rivals, evidence.lemmatizer)
    dropped: Counter[str] = Counter(v for v in verdicts.values() if v is not None)
    kept = [e for e in entries if verdicts.get(_key(e)) is None]
    for key, verdict in verdicts.items():
        kind, scope, element, phrase = judged[key]
        if verdict in NARROWED and kind == "column_synonym":
            kept += narrowed(firsts[key], scope, element, phrase, evidence)
    return kept, dropped


def narrowed(
    entry: BaseUKF, scope: Scope, element: Element, phrase: tuple[str, ...], evidence: Evidence
) -> list[BaseUKF]:
    """The column synonym scoped by a word next to its phrase in a source question ("high" →
    ``highest_elevation`` is ambiguous; "**how** high" is not), where that longer phrase
    has :data:`MIN_SUPPORT` questions and :data:`MIN_SHARE_AMBIGUOUS` of those saying it;
    one entry per source question that has one (``how``: ``context``)."""
    target = evidence.elements.get(str(entry.content_resources.get("target")))
    note = mining_note(entry)
    found: list[BaseUKF] = []
    for parent in dict.fromkeys(entry.parents):
        experience = evidence.experiences.get(parent)
        if target is None or experience is None:
            continue
        for start, end in _widened(experience.question, phrase, evidence.lemmatizer):
            longer = lemmas_of(experience.question[start:end], evidence.lemmatizer)
            weight = evidence.weigh(scope, element, longer)
            if weight.support >= MIN_SUPPORT and weight.share >= MIN_SHARE_AMBIGUOUS:
                prov = build.Provenance(
                    str(note.get("job_id", "")), str(note.get("miner", "")), experience, scope[0]
                )
                label = str(entry.content_resources.get("target_name") or target.name)
                text = experience.question[start:end]
                found.append(build.synonym(text, target, label, prov, "context"))
                break
    return found


def _scoping(lemma: str) -> bool:
    """A word that may scope a phrase: a content word, or "how" ("how high")."""
    return lemma.isalpha() and (lemma not in STOPWORDS or lemma in SCOPING_STOPWORDS)


def _widened(
    question: str, phrase: tuple[str, ...], lemmatizer: Lemmatizer | None
) -> list[tuple[int, int]]:
    """Spans of ``phrase`` in ``question`` with the word before, then with the word after."""
    tokens = tokenize(question, lemmatizer)
    lemmas = [t.lemma for t in tokens]
    n = len(phrase)
    for i in range(len(lemmas) - n + 1):
        if tuple(lemmas[i : i + n]) != phrase:
            continue
        spans = []
        if i > 0 and _scoping(tokens[i - 1].lemma):
            spans.append((tokens[i - 1].start, tokens[i + n - 1].end))
        if i + n < len(tokens) and _scoping(tokens[i + n].lemma):
            spans.append((tokens[i].start, tokens[i + n].end))
        return spans
    return []


def _key(entry: BaseUKF) -> tuple[str, str]:
    """Conflicting facts may share an id (a phrase, two columns): their content tells apart."""
    return entry.id, entry.content_hash


def _verdict(
    entry: BaseUKF, kind: str, weight: Weight, rivals: set[Element], lemmatizer: Lemmatizer | None
) -> str | None:
    if len(rivals) > 1 and weight.share < MIN_SHARE_AMBIGUOUS:
        return "ambiguous_phrase"
    if weight.share < MIN_SHARE:
        return "conflicting_evidence"
    if (
        kind in SUPPORTED_KINDS
        and weight.support < MIN_SUPPORT
        and not _exact(entry, kind, lemmatizer)
    ):
        return "low_support"
    return None


def _exact(entry: BaseUKF, kind: str, lemmatizer: Lemmatizer | None) -> bool:
    """A value said as it is, or a phrase sharing a whole content word with its element."""
    if mining_note(entry).get("how") in EXACT_HOW:
        return True
    r = entry.content_resources
    name = r.get("column") if kind == "column_synonym" else r.get("table")
    if kind not in ("column_synonym", "table_synonym") or not name:
        return False
    said = set(name_lemmas(entry.name, lemmatizer)) - STOPWORDS
    return bool(said & set(name_lemmas(str(name), lemmatizer)))
