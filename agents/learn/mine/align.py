"""Which words of a question name a schema element or a value: deterministic alignment.

``QuestionView`` tokenises a question the way the string index does (lemmas with their
spans) and marks the tokens that already-known phrases cover (the index's matches): those
are never learned again. What is left are *runs*: maximal stretches of uncovered content
words ("what is the **size** of california" → ``size``). An element is aligned with a run
when a word of the run shares its lemma, or a prefix of four letters or more, with a word
of the element's name ("highest point" ↔ ``highest_elevation``); a value is found where its
words occur in the question, or as the initials of a value of several words ("NC" ↔
``north carolina``). What cannot be aligned so is left to the optional LLM pairer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from indices.normalize import Lemmatizer, Token, tokenize
from indices.string import StringIndex

MAX_PHRASE_WORDS = 3
MIN_PREFIX = 4
# function words and the words of SQL operations, as lemmas ("does" → "doe"): never a name
_STOPWORD_TEXT = """
    a an the of in on at to for from by with and or not no is are was were be been being
    do doe does did have has had having what which who whom whose where when how why that this
    these those there here their its it they them he she his her me my we our you your i us
    all any each every some both either neither other same also only just than then as into
    about after before below above over under between during within without via
    list show give tell find return display get name names many much number count total s
    one ones different distinct unique maximum minimum max min average avg mean sum
    more less most least greater fewer order ordered sort sorted ascending descending ascend
    descend across numbers
    alphabetical alphabetically respectively together please can could would should will
    become became"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


@dataclass(frozen=True)
class Phrase:
    """Words of the question: their text as typed, span and lemmas."""

    text: str
    start: int
    end: int
    lemmas: tuple[str, ...]


def name_lemmas(name: str, lemmatizer: Lemmatizer | None = None) -> tuple[str, ...]:
    """The lemmas of an identifier or value (``highest_elevation`` → ``high``, ``elevation``)."""
    return tuple(t.lemma for t in tokenize(name, lemmatizer))


def _similar(word: str, other: str) -> bool:
    if word == other:
        return True
    shortest = min(len(word), len(other))
    return shortest >= MIN_PREFIX and word[:MIN_PREFIX] == other[:MIN_PREFIX]


class QuestionView:
    """One question's tokens, the ones known phrases cover, and its uncovered runs."""

    def __init__(
        self,
        question: str,
        strings: StringIndex | None = None,
        lemmatizer: Lemmatizer | None = None,
    ) -> None:
        self.question, self.lemmatizer = question, lemmatizer
        self.tokens: list[Token] = tokenize(question, lemmatizer)
        self.known = strings.search(question) if strings is not None else []
        self.covered: set[int] = {
            i
            for i, token in enumerate(self.tokens)
            if any(m.start <= token.start and token.end <= m.end for m in self.known)
        }
        self.used: set[int] = set()  # tokens already paired with an element of this question

    # ------------------------------------------------------------------ phrases
    def phrase(self, indices: Iterable[int]) -> Phrase:
        chosen = sorted(indices)
        first, last = self.tokens[chosen[0]], self.tokens[chosen[-1]]
        lemmas = tuple(self.tokens[i].lemma for i in chosen)
        return Phrase(self.question[first.start : last.end], first.start, last.end, lemmas)

    def is_covered(self, phrase: Phrase) -> bool:
        """Whether a known phrase already covers every word of ``phrase``."""
        inside = self._indices(phrase)
        return bool(inside) and inside <= self.covered

    def _indices(self, phrase: Phrase) -> set[int]:
        return {
            i for i, t in enumerate(self.tokens) if phrase.start <= t.start and t.end <= phrase.end
        }

    def claim(self, phrase: Phrase) -> None:
        """Mark the words of ``phrase`` as paired (no other element takes them)."""
        self.used |= self._indices(phrase)

    def runs(self, *, across_known: bool = False) -> list[list[int]]:
        """Maximal stretches of uncovered (or any, ``across_known``), unclaimed content words."""
        runs: list[list[int]] = []
        current: list[int] = []
        for i, token in enumerate(self.tokens):
            if current and self._punctuated(current[-1], i):
                runs.append(current)  # a comma or a bracket ends a phrase
                current = []
            free = (
                (across_known or i not in self.covered)
                and i not in self.used
                and token.lemma not in STOPWORDS
            )
            if free and not token.lemma.isdigit():
                current.append(i)
            elif current:
                runs.append(current)
                current = []
        if current:
            runs.append(current)
        return runs

    def words_after(self, position: int, limit: int = 2) -> Phrase | None:
        """Up to ``limit`` free content words right after ``position`` ("5,000 **people**"),
        with no punctuation between them; None when there are none."""
        picked: list[int] = []
        for i, token in enumerate(self.tokens):
            if token.start < position:
                continue
            gap_from = self.tokens[picked[-1]].end if picked else position
            if self.question[gap_from : token.start].strip() or len(picked) == limit:
                break
            if token.lemma in STOPWORDS or token.lemma.isdigit() or i in self.used:
                break
            picked.append(i)
        return self.phrase(picked) if picked else None

    def word_before(self, name: tuple[str, ...]) -> Phrase | None:
        """The free content word right before the words ``name`` (lemmas) and those words:
        "**major cities**" for ``city``; None when the name is absent or nothing precedes."""
        lemmas = [t.lemma for t in self.tokens]
        for begin in range(1, len(lemmas) - len(name) + 1):
            if tuple(lemmas[begin : begin + len(name)]) != name:
                continue
            word = self.tokens[begin - 1]
            if self._punctuated(begin - 1, begin) or begin - 1 in self.used:
                continue
            if word.lemma in STOPWORDS or word.lemma.isdigit() or not word.lemma.isalpha():
                continue
            return self.phrase(range(begin - 1, begin + len(name)))
        return None

    def _punctuated(self, before: int, after: int) -> bool:
        gap = self.question[self.tokens[before].end : self.tokens[after].start]
        return bool(gap.strip())

    def options(self) -> list[Phrase]:
        """Every n-gram (up to :data:`MAX_PHRASE_WORDS`) of the runs: what a pairer may pick."""
        found: dict[str, Phrase] = {}
        for run in self.runs():
            for size in range(1, MAX_PHRASE_WORDS + 1):
                for begin in range(0, len(run) - size + 1):
                    phrase = self.phrase(run[begin : begin + size])
                    found.setdefault(phrase.text.casefold(), phrase)
        return list(found.values())

    # --------------------------------------------------------------- alignment
    def find_value(self, value: str) -> Phrase | None:
        """Where the words of ``value`` occur together in the question, else None."""
        wanted = name_lemmas(value, self.lemmatizer)
        if not wanted:
            return None
        lemmas = [t.lemma for t in self.tokens]
        for begin in range(0, len(lemmas) - len(wanted) + 1):
            if tuple(lemmas[begin : begin + len(wanted)]) == wanted:
                return self.phrase(range(begin, begin + len(wanted)))
        return None

    def find_initials(self, value: str) -> Phrase | None:
        """A word of the question spelling the initials of a value of several words."""
        words = name_lemmas(value, self.lemmatizer)
        if len(words) < 2:
            return None
        initials = "".join(w[0] for w in words)
        for i, token in enumerate(self.tokens):
            if token.lemma == initials and i not in self.covered and i not in self.used:
                return self.phrase([i])
        return None

    def align(self, *names: str, across_known: bool = False) -> Phrase | None:
        """The longest run (capped) holding a word similar to a word of one of ``names``.

        ``across_known``: runs may hold known words too, as long as one word is new (a
        metric's name is often a known column plus a word: "population density")."""
        targets = [
            w for name in names for w in name_lemmas(name, self.lemmatizer) if w not in STOPWORDS
        ]
        best: list[int] | None = None
        for run in self.runs(across_known=across_known):
            if across_known and not any(i not in self.covered for i in run):
                continue
            hits = [i for i in run if any(_similar(self.tokens[i].lemma, t) for t in targets)]
            if not hits:
                continue
            anchor = run.index(hits[0])
            begin = max(0, min(anchor, len(run) - MAX_PHRASE_WORDS))
            window = run[begin : begin + MAX_PHRASE_WORDS]
            if best is None or len(window) > len(best):
                best = window
        return self.phrase(best) if best is not None else None
