"""The LLM-augmented Aho-Corasick synonym index (RubikSQL §5.1).

Patterns are the names and synonyms of UKF entries (synonyms come from profiling, documents and
LLM augmentation); they and the question are normalised alike (:mod:`indices.normalize`), so
"revenues of Nova" matches the synonym "Nova revenue"'s words in any inflection. Matching is on
whole words only. Each match carries its span in the original question, the pattern and every
UKF id that pattern belongs to.

Writes (``add``/``remove``) only update the pattern table; the automaton is rebuilt in a
background thread and swapped in atomically, so a search never waits: during a rebuild it
answers from the previous automaton. ``save``/``load`` keep the automaton on disk (no pickle:
values are integers) so a restart does not rebuild.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import ahocorasick

from indices.hits import Hit
from indices.normalize import Lemmatizer, Token, tokenize
from indices.sync import changes_since

if TYPE_CHECKING:
    from kb.store import KnowledgeStore
    from ukf import BaseUKF

log = logging.getLogger(__name__)
ConflictMode = Literal["all", "longest"]
UNINDEXED_TYPES = frozenset({"experience", "document"})  # names are whole questions / titles
STOP_PATTERNS = frozenset({"a", "an", "the", "of", "in", "on", "to", "be", "and", "or", "by"})


@dataclass(frozen=True)
class SpanMatch:
    """One whole-word match: original span, the matched pattern and its entries."""

    start: int
    end: int
    text: str
    pattern: str
    ukf_ids: tuple[str, ...]

    def hits(self) -> list[Hit]:
        score = float(len(self.pattern.split()))
        return [
            Hit(uid, score, "span", span=(self.start, self.end), phrase=self.text)
            for uid in self.ukf_ids
        ]


def phrases_for(entry: BaseUKF) -> list[str]:
    """The phrases an entry is found by: its name and synonyms (not for long-text types)."""
    if entry.type in UNINDEXED_TYPES:
        return list(entry.synonyms)
    return [entry.name, *entry.synonyms]


class _Automaton:
    """An immutable automaton over normalised patterns (`` lemma lemma ``), value = index."""

    def __init__(self, patterns: list[str], automaton: ahocorasick.Automaton | None = None):
        self.patterns = patterns
        self.automaton = automaton
        if automaton is None and patterns:
            self.automaton = ahocorasick.Automaton(ahocorasick.STORE_INTS)
            for index, pattern in enumerate(patterns):
                self.automaton.add_word(f" {pattern} ", index)
            self.automaton.make_automaton()


class StringIndex:
    """Whole-word synonym matching over UKF names and synonyms."""

    def __init__(self, lemmatizer: Lemmatizer | None = None, *, min_chars: int = 2) -> None:
        self._lemmatizer = lemmatizer
        self._min_chars = min_chars
        self._ids_by_pattern: dict[str, set[str]] = defaultdict(set)
        self._patterns_by_id: dict[str, set[str]] = defaultdict(set)
        self._current = _Automaton([])
        self._write_lock = threading.Lock()
        self._rebuild_lock = threading.Lock()
        self._dirty = threading.Event()
        self._worker: threading.Thread | None = None
        self._worker_lock = threading.Lock()
        self.version = 0  # store version the index reflects (set by the owner)

    # ---------------------------------------------------------------- writing
    def normalize(self, phrase: str) -> str:
        return " ".join(t.lemma for t in tokenize(phrase, self._lemmatizer))

    def add(self, items: Iterable[tuple[str, Iterable[str]]], *, rebuild: bool = True) -> int:
        """Add ``(ukf_id, phrases)`` pairs (batched); replaces an id's earlier phrases."""
        added = 0
        with self._write_lock:
            for ukf_id, phrases in items:
                self._drop(ukf_id)
                for phrase in phrases:
                    pattern = self.normalize(phrase)
                    if len(pattern) < self._min_chars or pattern in STOP_PATTERNS:
                        continue
                    self._ids_by_pattern[pattern].add(ukf_id)
                    self._patterns_by_id[ukf_id].add(pattern)
                    added += 1
        if rebuild:
            self.rebuild_in_background()
        return added

    def remove(self, ukf_ids: Iterable[str], *, rebuild: bool = True) -> None:
        with self._write_lock:
            for ukf_id in ukf_ids:
                self._drop(ukf_id)
        if rebuild:
            self.rebuild_in_background()

    def _drop(self, ukf_id: str) -> None:
        for pattern in self._patterns_by_id.pop(ukf_id, ()):
            owners = self._ids_by_pattern[pattern]
            owners.discard(ukf_id)
            if not owners:
                del self._ids_by_pattern[pattern]

    # --------------------------------------------------------------- rebuilding
    def rebuild(self) -> None:
        """Build a new automaton from the pattern table and swap it in."""
        with self._rebuild_lock:
            self._dirty.clear()
            with self._write_lock:
                patterns = sorted(self._ids_by_pattern)
            fresh = _Automaton(patterns)
            self._current = fresh  # atomic reference swap
            log.debug("string index rebuilt: %d patterns", len(patterns))

    def rebuild_in_background(self) -> None:
        """Schedule a rebuild; searches keep using the current automaton meanwhile.

        One worker at a time: a request while it builds marks the automaton dirty, and the
        worker builds again before it stops (it decides under the same lock, so a request
        never falls between its last build and its exit)."""
        with self._worker_lock:
            self._dirty.set()
            if self._worker is None:
                worker = threading.Thread(
                    target=self._rebuild_loop, daemon=True, name="string-index-rebuild"
                )
                worker.start()
                self._worker = worker

    def _rebuild_loop(self) -> None:
        while True:
            self.rebuild()
            with self._worker_lock:
                if not self._dirty.is_set():
                    self._worker = None
                    return

    def wait(self, timeout: float | None = None) -> None:
        """Block until pending rebuilds are done (tests, CLI)."""
        with self._worker_lock:
            worker = self._worker
        if worker is not None:
            worker.join(timeout)

    # ------------------------------------------------------------ store syncing
    @classmethod
    def from_store(cls, store: KnowledgeStore, lemmatizer: Lemmatizer | None = None) -> StringIndex:
        """Index every active entry's name and synonyms; follows ``store.version`` afterwards."""
        index = cls(lemmatizer)
        index.version = store.version
        index.add(((e.id, phrases_for(e)) for e in store.iterate()), rebuild=False)
        index.rebuild()
        return index

    def refresh(self, store: KnowledgeStore) -> bool:
        """Apply the store's writes since :attr:`version`; True when something changed."""
        changes = changes_since(store, self.version)
        if changes is None:
            return False
        self.remove(changes.removed, rebuild=False)
        self.add(((e.id, phrases_for(e)) for e in changes.active), rebuild=False)
        self.version = changes.version
        self.rebuild_in_background()
        return True

    # ------------------------------------------------------------------ reading
    @property
    def pattern_count(self) -> int:
        return len(self._current.patterns)

    def search(self, text: str, *, mode: ConflictMode = "all") -> list[SpanMatch]:
        """Whole-word matches in ``text``, by start position (``longest``: no overlaps)."""
        current = self._current
        if current.automaton is None:
            return []
        tokens = tokenize(text, self._lemmatizer)
        normalized, starts = _joined(tokens)
        matches = []
        for end, index in current.automaton.iter(normalized):
            pattern = current.patterns[index]
            begin = end - len(pattern)  # the pattern sits between two spaces
            first, last = starts[begin], starts[begin] + len(pattern.split()) - 1
            owners = self._ids_by_pattern.get(pattern)
            if not owners:
                continue  # removed since the automaton was built
            span = (tokens[first].start, tokens[last].end)
            matches.append(
                SpanMatch(span[0], span[1], text[span[0] : span[1]], pattern, tuple(sorted(owners)))
            )
        matches.sort(key=lambda m: (m.start, -(m.end - m.start)))
        return _longest(matches) if mode == "longest" else matches

    def search_hits(self, text: str, *, mode: ConflictMode = "all") -> list[Hit]:
        return [hit for match in self.search(text, mode=mode) for hit in match.hits()]

    # ------------------------------------------------------------------ storage
    def save(self, folder: Path) -> None:
        """Write the automaton and the pattern table to ``folder``."""
        folder.mkdir(parents=True, exist_ok=True)
        current = self._current
        with self._write_lock:
            table = {p: sorted(ids) for p, ids in self._ids_by_pattern.items()}
        meta = {"version": self.version, "patterns": current.patterns, "owners": table}
        (folder / "patterns.json").write_text(json.dumps(meta, ensure_ascii=False))
        if current.automaton is not None:
            current.automaton.save(str(folder / "automaton.bin"))  # int values: no serializer

    @classmethod
    def load(cls, folder: Path, lemmatizer: Lemmatizer | None = None) -> StringIndex:
        """Load what :meth:`save` wrote, without rebuilding the automaton."""
        meta = json.loads((folder / "patterns.json").read_text())
        index = cls(lemmatizer)
        for pattern, owners in meta["owners"].items():
            index._ids_by_pattern[pattern] = set(owners)
            for owner in owners:
                index._patterns_by_id[owner].add(pattern)
        automaton_file = folder / "automaton.bin"
        automaton = (
            ahocorasick.load(str(automaton_file), _refuse_objects)
            if automaton_file.exists()
            else None
        )
        index._current = _Automaton(meta["patterns"], automaton)
        index.version = meta["version"]
        return index


def _refuse_objects(_raw: bytes) -> object:
    raise ValueError("the string index stores integers only; refusing a pickled value")


def _joined(tokens: list[Token]) -> tuple[str, dict[int, int]]:
    """`` lemma lemma ... `` and a map from each lemma's start offset to its token index."""
    parts, starts, position = [" "], {}, 0
    for i, token in enumerate(tokens):
        starts[position + 1] = i
        parts.append(token.lemma + " ")
        position += len(token.lemma) + 1
    return "".join(parts), starts


def _longest(matches: list[SpanMatch]) -> list[SpanMatch]:
    """Greedy longest-first selection of non-overlapping matches, returned by position."""
    chosen: list[SpanMatch] = []
    for match in sorted(matches, key=lambda m: (-(m.end - m.start), m.start)):
        if all(match.end <= c.start or match.start >= c.end for c in chosen):
            chosen.append(match)
    return sorted(chosen, key=lambda m: m.start)
