"""The signals an answer's confidence is computed from, cheapest first.

:func:`answer_signals` looks at one question's retrieval and candidates and returns
:class:`AnswerSignals`: named numeric ``features`` (what the calibrator reads, see
:mod:`agents.confidence.calibrator`) and the findings behind them that an abstention names
(the unmatched words, the period outside the data, the phrase with two meanings).

Features (a feature that does not apply is left out, never set to a made-up value):

- ``logprob_mean``, ``logprob_min``: the winning reply's token log probabilities (when the
  model reports them), and ``sql_logprob_mean``, ``sql_logprob_min`` over its SQL alone;
- how complex the SQL is (:mod:`agents.confidence.sql_shape`): tables, subqueries, set
  operations, conditions, aggregates, clauses, length;
- ``span_coverage``: share of the question's content words that a knowledge match covers
  (a span of the string index, a time phrase) or that the database's knowledge names
  (:mod:`agents.confidence.vocabulary`); ``unmatched_content_words``: how many do not;
  ``content_words``;
- ``nearest_example_similarity``: similarity of the nearest labeled experience shown as an
  example; ``same_skeleton_example``: 1 when an example's SQL has the winner's skeleton;
- ``repairs``: refine rounds the winner needed; ``value_corrected``: refine changed one of
  its values;
- ``result_rows_log`` (log10 of 1 + rows), ``result_columns``;
- ``empty_result``, ``degenerate_result`` (only NULLs, zeros or empty strings),
  ``shape_mismatch`` (a question asking for one number answered with several rows, or one
  asking for a list answered by a bare count), ``text_for_measure`` (a question asking for
  one measure, "how high is ...", "what is the population of ...", answered with a name or
  label among its values: the SQL read a name column or returned one beside the number);
- ``period_outside_data``: a year or time window the question names lies wholly outside the
  dates the data covers;
- ``ambiguous_phrases``: phrases the knowledge base gives two or more meanings;
- ``linked_filters``, ``linked_filters_unused``: phrases linked to a metric or predicate
  that quotes values, and those whose values the SQL leaves out
  (:mod:`agents.confidence.knowledge_use`);
- ``projection_echoes_filter``: the SELECT returns only columns its WHERE holds equal to a
  literal; ``attribute_via_reference``: it reads a column of rows referencing the named
  entity when the entity's own table has that column (:mod:`agents.confidence.sql_reading`);
- ``unlinked_joins``: joins whose ON links nothing (``ON a.x = a.x``, or reading one side
  only; :mod:`agents.sql.join_check`): refine asks the model to repair them, and one that
  survives pairs every row with every other;
- ``samples``, ``failed_share``; with more than one sample ``vote_share`` (the winning
  result's share of all samples) and ``distinct_results``;
- ``plain_fallback``, ``escalated`` (tiers asked after the first);
- ``template_filled``: 1 when the winner was filled from a mined query template with no
  model call (left out otherwise).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from agents.answer import Candidate
from agents.confidence.knowledge_use import knowledge_use
from agents.confidence.sql_reading import sql_reading
from agents.confidence.sql_shape import parse_statement, sql_shape
from agents.confidence.vocabulary import VocabularySnapshot, generic_words
from agents.rag.agent import RagContext
from agents.sql.extract import statement_only
from agents.sql.join_check import unlinked_joins
from agents.sql.vote import VoteOutcome
from indices.experience_skeleton import skeleton_of, sql_skeleton
from indices.normalize import tokenize

MEANING_TYPES = ("synonym", "metric", "predicate", "knowledge", "taxonomy")
_SCALAR_ASK = re.compile(
    r"\b(how many|how much|number of|count of|total|sum of|average|mean|median|"
    r"percentage|proportion|ratio)\b",
    re.IGNORECASE,
)
_GROUPED_ASK = re.compile(
    r"\b(each|per|every|by|for all|breakdown|respectively|list|which|what are|show)\b", re.I
)
_MEASURE_ASK = re.compile(
    r"^\s*(how (high|tall|long|large|big|much|many|old|deep|far|heavy|wide|populous)\b|"
    r"(what|which) (is|was) the (population|area|length|size|height|elevation|altitude|density|"
    r"number|total|average|count|sum|maximum|minimum)\b)",
    re.IGNORECASE,
)
_NUMBER_TEXT = re.compile(r"\s*[-+]?[\d.,]+\s*%?\s*")
_LIST_ASK = re.compile(r"^\s*(list|show|give me|find|what are|which)\b", re.IGNORECASE)
_YEAR = re.compile(r"\b(1[0-9]{3}|2[0-9]{3})\b")


@dataclass(frozen=True)
class Meaning:
    """One meaning the knowledge base gives a phrase: an entry and what it says."""

    id: str
    type: str
    name: str
    description: str


@dataclass(frozen=True)
class Ambiguity:
    phrase: str
    span: tuple[int, int]
    meanings: tuple[Meaning, ...]


@dataclass
class AnswerSignals:
    """An answer's confidence signals (see the module docstring)."""

    features: dict[str, float] = field(default_factory=dict)
    unmatched: list[str] = field(default_factory=list)
    period: str | None = None  # the year or window outside the data, as the question says it
    data_span: str | None = None  # what the data covers, for the reason
    ambiguities: list[Ambiguity] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"features": dict(self.features), "unmatched": list(self.unmatched)}


def answer_signals(
    question: str,
    rag: RagContext,
    candidates: Sequence[Candidate],
    vote: VoteOutcome | None,
    vocabulary: VocabularySnapshot,
    *,
    dialect: str = "sqlite",
    plain_fallback: bool = False,
    tiers_tried: int = 1,
) -> AnswerSignals:
    """The signals of the answer that ``vote`` chose among ``candidates`` (see above)."""
    signals = AnswerSignals()
    f = signals.features
    _coverage(question, rag, vocabulary, signals)
    _period(question, rag, vocabulary, signals)
    signals.ambiguities = ambiguities(rag)
    f["ambiguous_phrases"] = float(len(signals.ambiguities))
    f["samples"] = float(len(candidates))
    f["failed_share"] = sum(not c.ok for c in candidates) / len(candidates) if candidates else 1.0
    if len(candidates) > 1 and vote is not None:
        f["vote_share"] = vote.confidence
        f["distinct_results"] = float(len(vote.groups))
    f["plain_fallback"] = float(plain_fallback)
    f["escalated"] = float(max(0, tiers_tried - 1))
    winner = vote.winner if vote is not None else None
    if winner is None:
        f["no_result"] = 1.0
        return signals
    f["no_result"] = 0.0
    if winner.logprob_mean is not None:
        f["logprob_mean"] = winner.logprob_mean
    if winner.logprob_min is not None:
        f["logprob_min"] = winner.logprob_min
    if winner.sql_logprob_mean is not None and winner.sql_logprob_min is not None:
        f["sql_logprob_mean"], f["sql_logprob_min"] = (
            winner.sql_logprob_mean,
            winner.sql_logprob_min,
        )
    statement = statement_only(winner.sql)
    tree = parse_statement(statement, dialect)
    if tree is not None:  # the SQL features are left out when it does not parse
        f.update(sql_shape(statement, dialect, tree=tree))
        f.update(knowledge_use(rag, statement, dialect, tree=tree))
        f.update(sql_reading(tree, vocabulary.keys))
        f["unlinked_joins"] = float(len(unlinked_joins(statement, dialect, tree=tree)))
    f["repairs"] = float(winner.repairs)
    f["value_corrected"] = float(any("value" in note for note in winner.notes))
    if winner.template_id is not None:
        f["template_filled"] = 1.0
    _result_shape(question, winner, f)
    _examples(rag, winner, dialect, f)
    return signals


def content_words(question: str) -> list[tuple[str, int, int]]:
    """(lemma, start, end) of the words of ``question`` that could name data: neither
    function nor asking words (``generic_words.txt``), nor numbers, nor single letters."""
    generic = generic_words()  # read once (cached)
    return [
        (t.lemma, t.start, t.end)
        for t in tokenize(question)
        if len(t.lemma) > 1 and not t.lemma.isdigit() and t.lemma not in generic
    ]


def ambiguities(rag: RagContext) -> list[Ambiguity]:
    """Question phrases matched by two or more business entries that say different things
    (two synonyms of "revenue" pointing at different columns, two metrics named alike)."""
    by_span: dict[tuple[int, int], dict[str, Meaning]] = {}
    for item in [*rag.evidence.items, *rag.evidence.dropped]:
        entry = item.entry
        if entry.type not in MEANING_TYPES:
            continue
        for hit in item.hits:
            if hit.reason == "span" and hit.span is not None:
                meaning = Meaning(entry.id, entry.type, entry.name, _meaning_text(entry))
                by_span.setdefault(hit.span, {})[_meaning_key(entry)] = meaning
    found = []
    for span, meanings in sorted(by_span.items()):
        if len(meanings) >= 2:
            phrase = rag.question[span[0] : span[1]]
            found.append(Ambiguity(phrase, span, tuple(meanings.values())))
    return found


def _coverage(
    question: str, rag: RagContext, vocabulary: VocabularySnapshot, signals: AnswerSignals
) -> None:
    spans = [
        hit.span
        for item in [*rag.evidence.items, *rag.evidence.dropped]
        for hit in item.hits
        if hit.span is not None
    ]
    if rag.facts is not None:
        spans += [window.span for window in rag.facts.windows]
    words = content_words(question)
    unmatched = [
        question[start:end]
        for lemma, start, end in words
        if lemma not in vocabulary.lemmas and not any(a < end and start < b for a, b in spans)
    ]
    signals.unmatched = list(dict.fromkeys(unmatched))
    f = signals.features
    f["content_words"] = float(len(words))
    f["unmatched_content_words"] = float(len(unmatched))
    f["span_coverage"] = 1.0 - len(unmatched) / len(words) if words else 1.0


def _period(
    question: str, rag: RagContext, vocabulary: VocabularySnapshot, signals: AnswerSignals
) -> None:
    span = vocabulary.span
    if span is None:
        return
    outside: list[str] = []
    asked = 0
    windows = rag.facts.windows if rag.facts is not None else []
    taken = [w.span for w in windows]
    for window in windows:
        first, last = _month(window.first), _month(window.last, end=True)
        if first is None or last is None:
            continue
        asked += 1
        if not span.overlaps(first, last):
            outside.append(window.phrase)
    for match in _YEAR.finditer(question):
        if any(a <= match.start() < b for a, b in taken):
            continue
        asked += 1
        if not span.covers_year(int(match.group())):
            outside.append(match.group())
    if asked:
        signals.features["period_outside_data"] = float(bool(outside) and len(outside) == asked)
    if outside and len(outside) == asked:
        signals.period, signals.data_span = ", ".join(outside), span.describe()


def _result_shape(question: str, winner: Candidate, f: dict[str, float]) -> None:
    results = winner.results
    assert results is not None
    rows = results.rows
    f["empty_result"] = float(results.row_count == 0)
    f["result_rows_log"] = math.log10(1 + results.row_count)
    f["result_columns"] = float(len(results.columns))
    values = [v for row in rows for v in row]
    f["degenerate_result"] = float(
        bool(rows) and all(v is None or v == 0 or v == "" for v in values)
    )
    scalar_asked = bool(_SCALAR_ASK.search(question)) and not _GROUPED_ASK.search(question)
    one_number = results.row_count == 1 and len(results.columns) == 1
    bare_count = one_number and isinstance(rows[0][0], int | float) if rows else False
    mismatch = (scalar_asked and results.row_count > 1) or (
        bool(_LIST_ASK.search(question)) and not _SCALAR_ASK.search(question) and bare_count
    )
    f["shape_mismatch"] = float(mismatch)
    measure_asked = bool(_MEASURE_ASK.search(question)) and not _GROUPED_ASK.search(question)
    f["text_for_measure"] = float(measure_asked and any(_is_text(v) for v in values))


def _is_text(value: Any) -> bool:
    """A value that is no number (a name, a label); numbers stored as text are numbers."""
    return isinstance(value, str) and bool(value.strip()) and not _NUMBER_TEXT.fullmatch(value)


def _examples(rag: RagContext, winner: Candidate, dialect: str, f: dict[str, float]) -> None:
    similarities = [
        float(hit.detail.get("similarity", hit.score))
        for item in rag.evidence.items
        if item.entry.type == "experience" and _trusted(item.entry)
        for hit in item.hits
        if hit.reason == "vector"
    ]
    if similarities:
        f["nearest_example_similarity"] = max(similarities)
    if not rag.examples:
        return
    mine = sql_skeleton(winner.sql, dialect)
    f["same_skeleton_example"] = float(any(skeleton_of(e) == mine for e in rag.examples))


def _trusted(entry: Any) -> bool:
    """A labeled or verified experience (a logged question nobody checked is no example)."""
    resources = entry.content_resources
    return bool(resources.get("labeled") or resources.get("verified"))


def _meaning_key(entry: Any) -> str:
    """What an entry makes a phrase mean: two entries with the same key are one meaning."""
    resources = entry.content_resources
    for key in ("target", "formula", "condition"):
        value = resources.get(key)
        if value:
            return f"{key}:{value}"
    return entry.id


def _meaning_text(entry: Any) -> str:
    resources = entry.content_resources
    if resources.get("target_name"):
        return str(resources["target_name"])
    for key in ("formula", "condition"):
        if resources.get(key):
            return f"{entry.name}: {resources[key]}"
    return entry.short_description or entry.content or entry.description or entry.name


def _month(value: str, *, end: bool = False) -> date | None:
    """The first (or last) day of a window's month, written ``YYYYMM`` or ``YYYY-MM``."""
    digits = value.replace("-", "")[:6]
    if len(digits) != 6 or not digits.isdigit():
        return None
    year, month = int(digits[:4]), int(digits[4:])
    if not 1 <= month <= 12:
        return None
    if not end:
        return date(year, month, 1)
    following = date(year + month // 12, month % 12 + 1, 1)
    return date.fromordinal(following.toordinal() - 1)
