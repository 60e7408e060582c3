"""Text normalisation and character n-grams for fuzzy matching (see ``indices.fuzzy``).

A text becomes tokens, and each token a set of character n-grams with boundary markers::

    tokens("orderDate_NV-200 Zürich")  == ["order", "date", "nv", "200", "zurich"]
    ngrams("cat")                      == {"#ca", "cat", "at#"}

Normalisation: Unicode NFKD with combining marks dropped (accents stripped), camelCase and
letter/digit boundaries split (``NV200`` → ``nv 200``), then case-folded; every run of
characters that are not letters or digits (punctuation, ``_``, spaces) separates tokens.
Both sides of a comparison go through the same steps, so ``NV200``, ``nv-200`` and ``NV 200``
are the same tokens.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

BOUNDARY = "#"
DEFAULT_N = 3
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_LETTER_DIGIT = re.compile(r"(?<=[^\W\d_])(?=\d)|(?<=\d)(?=[^\W\d_])")
_SEPARATORS = re.compile(r"[\W_]+")


def strip_accents(text: str) -> str:
    """``"Zürich Café"`` → ``"Zurich Cafe"`` (NFKD, combining marks removed)."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def tokens(text: str) -> list[str]:
    """Normalised tokens of ``text`` (see the module docstring)."""
    text = strip_accents(str(text))
    text = _LETTER_DIGIT.sub(" ", _CAMEL.sub(" ", text))
    return [token for token in _SEPARATORS.split(text.casefold()) if token]


def normalize(text: str) -> str:
    """The tokens of ``text`` joined by single spaces: ``"NV-200"`` → ``"nv 200"``."""
    return " ".join(tokens(text))


def token_ngrams(token: str, n: int = DEFAULT_N) -> set[str]:
    """Character n-grams of ``#token#`` (a padded token of at most ``n`` characters is one gram)."""
    padded = f"{BOUNDARY}{token}{BOUNDARY}"
    if len(padded) <= n:
        return {padded}
    return {padded[start : start + n] for start in range(len(padded) - n + 1)}


def ngrams(text: str, n: int = DEFAULT_N) -> set[str]:
    """The set of n-grams of every token of ``text``."""
    return ngrams_of_tokens(tokens(text), n)


def ngrams_of_tokens(words: Iterable[str], n: int = DEFAULT_N) -> set[str]:
    """The union of :func:`token_ngrams` over ``words``."""
    grams: set[str] = set()
    for word in words:
        grams |= token_ngrams(word, n)
    return grams


def containment(query: str, document: str, n: int = DEFAULT_N) -> float:
    """Asymmetric Jaccard containment ``|Q ∩ D| / |Q|`` of n-gram sets (0 for an empty query).

    How much of the query appears in the document: a query fully inside a longer document
    scores 1.0, while the reverse does not.
    """
    q, d = ngrams(query, n), ngrams(document, n)
    return len(q & d) / len(q) if q else 0.0
