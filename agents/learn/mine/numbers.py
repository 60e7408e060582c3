"""Numeric comparisons: "more than 5,000 people", "over 10 million", "bigger than 5k".

:func:`number_mentions` finds the numbers of a question with their value ("5k", "5,000",
"10 million", "1.5bn" read as numbers) and the comparative words before them ("more than",
"at least", "bigger than"); :func:`match_comparison` pairs a mention with the SQL predicate
comparing a column with the same number (``>``, ``>=``, ``<``, ``<=``), in a direction the
words allow. What is mined is the *pattern*, never the constant: the phrase that names the
column (the unit after the number, "people" → ``population``; or a comparative adjective,
"bigger than" → ``area >``), with the number left to the next question. A number the
question does not say at all is a *threshold* (:func:`is_threshold`): there the constant is
the knowledge, named by the word before the table's name ("major cities" →
``city.population > 150000``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from agents.learn.mine.sql_facts import PredicateFact

SCALES = {
    "k": 1e3,
    "thousand": 1e3,
    "m": 1e6,
    "mn": 1e6,
    "million": 1e6,
    "b": 1e9,
    "bn": 1e9,
    "billion": 1e9,
    "trillion": 1e12,
}
_NUMBER = re.compile(
    r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?"
    r"(?:(k|m|mn|bn|b)\b|\s+(thousand|million|billion|trillion)\b)?(?![\w.,]\d)",
    re.I,
)
UP = ("more than", "greater than", "over", "above", "exceeding", "at least", "no less than")
DOWN = ("less than", "fewer than", "under", "below", "at most", "no more than", "up to")
# comparatives meaning "smaller" ("lighter than 3500": weight < 3500); any other is "larger"
DOWN_WORDS = frozenset(
    {
        "less",
        "fewer",
        "lower",
        "smaller",
        "lighter",
        "shorter",
        "younger",
        "cheaper",
        "earlier",
        "narrower",
        "thinner",
        "slower",
        "poorer",
        "worse",
        "lesser",
    }
)
_GENERIC = "|".join(p.replace(" ", r"\s+") for p in sorted(UP + DOWN, key=len, reverse=True))
_COMPARATIVE = r"(?:\w+er|more\s+\w+|less\s+\w+)\s+than"
_BEFORE = re.compile(
    rf"\b(?P<words>{_GENERIC}|{_COMPARATIVE})(?:\s+(?:a|an|the))?\s*$",
    re.I,
)
COMPARISON_OPS = frozenset({">", ">=", "<", "<="})


@dataclass(frozen=True)
class NumberMention:
    """A number of the question: its text, span, value and the comparative words before it
    (``comparator``, lower case, single-spaced; empty without)."""

    text: str
    start: int
    end: int
    value: float
    comparator: str = ""
    comparator_start: int = -1

    @property
    def generic(self) -> bool:
        """Comparative words that name no column ("more than"), unlike "bigger than"."""
        return self.comparator in UP or self.comparator in DOWN

    def allows(self, op: str) -> bool:
        """Whether the words may mean ``op`` ("lighter than" ``<``, "older than" ``>``)."""
        if not self.comparator:
            return False
        first = self.comparator.split()[0]
        down = self.comparator in DOWN or first in DOWN_WORDS
        return op in (("<", "<=") if down else (">", ">="))


def parse_number(text: str) -> float | None:
    """``"5k"`` → 5000, ``"5,000"`` → 5000, ``"10 million"`` → 10000000; None otherwise."""
    found = _NUMBER.fullmatch(text.strip())
    return _value(found) if found else None


def _value(found: re.Match[str]) -> float:
    digits = found[1].replace(",", "") + (found[2] or "")
    scale = (found[3] or found[4] or "").lower()
    return float(digits) * SCALES.get(scale, 1.0)


def number_mentions(question: str) -> list[NumberMention]:
    """Every number of ``question`` with the comparative words before it."""
    mentions: list[NumberMention] = []
    for found in _NUMBER.finditer(question):
        window = max(0, found.start() - 40)
        before = _BEFORE.search(question[window : found.start()])
        comparator, at = "", -1
        if before is not None:
            comparator = " ".join(before["words"].lower().split())
            at = window + before.start()
        mentions.append(
            NumberMention(found.group(0), found.start(), found.end(), _value(found), comparator, at)
        )
    return mentions


def match_comparison(
    pred: PredicateFact, mentions: Iterable[NumberMention]
) -> NumberMention | None:
    """The mention with ``pred``'s number and words allowing its operator, else None."""
    if pred.op not in COMPARISON_OPS or len(pred.values) != 1:
        return None
    value = pred.values[0]
    if isinstance(value, str | bool):
        return None
    for mention in mentions:
        if _same(mention.value, float(value)) and mention.allows(pred.op):
            return mention
    return None


def is_threshold(pred: PredicateFact, mentions: Iterable[NumberMention]) -> bool:
    """A column compared with a number the question does not say: a threshold a word of
    the question stands for ("major cities" → ``population > 150000``)."""
    if pred.op not in COMPARISON_OPS or len(pred.values) != 1:
        return False
    value = pred.values[0]
    if isinstance(value, str | bool):
        return False
    return not any(_same(m.value, float(value)) for m in mentions)


def _same(left: float, right: float) -> bool:
    return abs(left - right) <= 1e-9 * max(1.0, abs(left), abs(right))
