"""What a database's knowledge names: the lemmas a question's words are checked against.

A question about data the database does not hold ("the average *salary* of singers" on a
database with no salaries) uses a content word that no table, column, description, synonym,
metric, rule or glossary entry of that database mentions. :class:`DatabaseVocabulary` holds
the lemmas of every such name and description (split at underscores and camelCase, as the
string index splits identifiers, see :mod:`indices.normalize`), and the span of time the
data covers (the temporal columns' profiled minimum and maximum, and integer columns named
like years). It reloads when an entry of a watched type of its database changes
(:class:`~agents.rag.store_watch.StoreWatch`); experiences logged by questions do not make it
reload.

Enum values are left out (a database may hold hundreds of thousands): the string index
already matches the values a question names, and those matches count as covered words.
"""

from __future__ import annotations

import datetime as dt
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from agents.confidence.sql_reading import SchemaKeys
from agents.rag.store_watch import StoreWatch
from indices.normalize import tokenize
from kb.store import KnowledgeStore

VOCABULARY_TYPES = (
    "table",
    "column",
    "synonym",
    "metric",
    "predicate",
    "rule",
    "taxonomy",
    "knowledge",
)
_TEXT_FIELDS = ("table", "column", "comment", "phrase", "phrases", "synonyms", "terms", "unit")
YEAR_LIMITS = (1000, 2999)
GENERIC_WORDS_FILE = Path(__file__).with_name("generic_words.txt")


@lru_cache(maxsize=1)
def generic_words() -> frozenset[str]:
    """Words that name no data (``generic_words.txt``): function words and asking words,
    with their lemmas as a question's words are compared by lemma (the lookup lemmatiser
    makes "number" "numb")."""
    words: set[str] = set()
    for line in GENERIC_WORDS_FILE.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            for word in line.lower().split():
                words.add(word)
                words.update(t.lemma for t in tokenize(word))
    return frozenset(words)


@dataclass(frozen=True)
class DataSpan:
    """The dates the data covers: ``first``..``last`` (ISO dates), from ``columns``."""

    first: dt.date
    last: dt.date
    columns: tuple[str, ...] = ()

    def covers_year(self, year: int) -> bool:
        return self.first.year <= year <= self.last.year

    def overlaps(self, first: dt.date, last: dt.date) -> bool:
        return first <= self.last and last >= self.first

    def describe(self) -> str:
        """``2014 to 2015`` for whole years, else ``2019-01-01 to 2024-06-30``."""
        whole = (self.first.month, self.first.day, self.last.month, self.last.day) == (1, 1, 12, 31)
        if whole:
            if self.first.year == self.last.year:
                return str(self.first.year)
            return f"{self.first.year} to {self.last.year}"
        return f"{self.first.isoformat()} to {self.last.isoformat()}"


@dataclass
class VocabularySnapshot:
    lemmas: frozenset[str] = frozenset()
    span: DataSpan | None = None
    tables: tuple[str, ...] = field(default_factory=tuple)
    keys: SchemaKeys = field(default_factory=SchemaKeys)


class DatabaseVocabulary:
    """The lemmas one database's knowledge names, and the span of its dates (see above)."""

    def __init__(self, store: KnowledgeStore, database: str) -> None:
        self.store, self.database = store, database
        self._watch = StoreWatch(store, VOCABULARY_TYPES, database)
        self._snapshot = VocabularySnapshot()
        self._lock = threading.Lock()

    def snapshot(self) -> VocabularySnapshot:
        """The current lemmas and data span (reloaded when the database's knowledge changed)."""
        with self._lock:
            if self._watch.changed():
                self._snapshot = self._load()
            return self._snapshot

    def _load(self) -> VocabularySnapshot:
        lemmas: set[str] = set()
        spans: list[tuple[dt.date, dt.date, str]] = []
        tables: list[str] = []
        columns: list[dict[str, Any]] = []
        for type_name in VOCABULARY_TYPES:
            for entry in self.store.iterate(type=type_name):
                resources = entry.content_resources
                databases = entry.tag_values("DATABASE")
                own = resources.get("database") == self.database or self.database in databases
                if not own:
                    continue
                texts = [entry.name, entry.short_description, entry.description]
                texts += [*entry.synonyms, *_texts(resources)]
                for text in texts:
                    lemmas.update(t.lemma for t in tokenize(text))
                if type_name == "table":
                    tables.append(str(resources.get("table") or entry.name))
                if type_name == "column":
                    columns.append(resources)
                    found = column_span(resources)
                    if found is not None:
                        where = f"{resources.get('table')}.{resources.get('column')}"
                        spans.append((*found, where))
        span = None
        if spans:
            span = DataSpan(
                min(s[0] for s in spans),
                max(s[1] for s in spans),
                tuple(sorted({s[2] for s in spans})),
            )
        keys = SchemaKeys.from_columns(columns)
        return VocabularySnapshot(frozenset(lemmas), span, tuple(sorted(tables)), keys)


def column_span(resources: dict[str, Any]) -> tuple[dt.date, dt.date] | None:
    """The dates a profiled column covers: a temporal column's ISO minimum and maximum, or an
    integer column named like a year whose values are years; None otherwise."""
    statistics = resources.get("statistics") or {}
    temporal = statistics.get("temporal") or {}
    low, high = _date(temporal.get("min_iso")), _date(temporal.get("max_iso"))
    if low is not None and high is not None:
        return low, high
    numeric = statistics.get("numeric") or {}
    name = str(resources.get("column") or "").lower()
    if "year" in name and numeric.get("kind") == "integer":
        first, last = numeric.get("min"), numeric.get("max")
        numbers = isinstance(first, int | float) and isinstance(last, int | float)
        if numbers and YEAR_LIMITS[0] <= first <= last <= YEAR_LIMITS[1]:
            return dt.date(int(first), 1, 1), dt.date(int(last), 12, 31)
    return None


def _date(value: Any) -> dt.date | None:
    if not isinstance(value, str) or len(value) < 4:
        return None
    text = value[:10]
    for fmt, size in (("%Y-%m-%d", 10), ("%Y-%m", 7), ("%Y", 4)):
        try:
            return dt.datetime.strptime(text[:size], fmt).date()
        except ValueError:
            continue
    return None


def _texts(resources: dict[str, Any]) -> list[str]:
    texts: list[str] = []
    for key in _TEXT_FIELDS:
        value = resources.get(key)
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, list | tuple):
            texts.extend(str(v) for v in value if isinstance(v, str))
    return texts
