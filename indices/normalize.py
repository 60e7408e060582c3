"""Text normalisation shared by patterns and questions.

Lower-case; split into tokens on anything that is not a letter or digit, and at camelCase and
letter/digit boundaries inside identifiers (``SingerID`` → ``singer id``, ``ptd_amt_usd`` →
``ptd amt usd``); lemmatise each token with spaCy's lookup lemmatiser (``revenues`` →
``revenue``). Every token keeps its character span in the original text, so a match on the
normalised form maps back to the words the user typed.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_ASCII_PIECE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_OTHER_PIECE = re.compile(r"\d+|[^\W\d_]+", re.UNICODE)


@dataclass(frozen=True)
class Token:
    lemma: str
    start: int
    end: int


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


class Lemmatizer:
    """spaCy ``blank("en")`` with the lookup lemmatiser (``spacy-lookups-data``); lazy, cached."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._table: Any = None

    def _lookups(self) -> Any:
        with self._lock:
            if self._table is None:
                spacy = _import_spacy_without_torch()
                nlp = spacy.blank("en")
                lemmatizer = nlp.add_pipe("lemmatizer", config={"mode": "lookup"})
                nlp.initialize()
                self._table = lemmatizer.lookups.get_table("lemma_lookup")
            return self._table

    @lru_cache(maxsize=200_000)  # noqa: B019 - one lemmatiser per process, bounded cache
    def lemma(self, word: str) -> str:
        return self._lookups().get(word, word)


def _import_spacy_without_torch() -> Any:
    """spaCy, without the PyTorch import its ``thinc`` makes on the way (~2 s on 2 cores).

    The lookup lemmatiser never runs a thinc model, so thinc is shown no torch while spaCy
    loads (``has_torch`` false); a torch already imported, or imported later by the
    embedder, is not affected.
    """
    import sys

    if "spacy" in sys.modules or "torch" in sys.modules:
        import spacy

        return spacy
    sys.modules["torch"] = None  # type: ignore[assignment]  # "import torch" fails fast
    try:
        import spacy
    finally:
        del sys.modules["torch"]
    return spacy


@lru_cache(maxsize=1)
def default_lemmatizer() -> Lemmatizer:
    return Lemmatizer()


def tokenize(text: str, lemmatizer: Lemmatizer | None = None) -> list[Token]:
    """Normalised tokens of ``text`` with their spans in ``text``."""
    lemmatizer = lemmatizer or default_lemmatizer()
    folded = _fold(text)
    if len(folded) != len(text):  # folding changed offsets: keep the original spans
        folded = text
    tokens: list[Token] = []
    for word in _WORD.finditer(folded):
        pieces = _ASCII_PIECE if word.group().isascii() else _OTHER_PIECE
        for piece in pieces.finditer(word.group()):
            start = word.start() + piece.start()
            lowered = piece.group().lower()
            tokens.append(Token(lemmatizer.lemma(lowered), start, start + len(lowered)))
    return tokens


def normalize(text: str, lemmatizer: Lemmatizer | None = None) -> str:
    """The normalised form: lemmas joined by single spaces."""
    return " ".join(token.lemma for token in tokenize(text, lemmatizer))
