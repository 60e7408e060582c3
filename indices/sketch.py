"""Query sketches: a question with its entities replaced by type placeholders.

"List the names of top 3 singers from France" becomes
"List the [COLUMN] of top [VALUE] [TABLE] from [ENUM]": questions that differ only in the
entities they mention get the same sketch, so similar experiences are found by structure.
Entities come from the string index (longest non-overlapping matches); numbers and quoted
strings become ``[VALUE]``.

Which placeholder a match gets is a policy: by default its entry type (within ``mask``);
:func:`value_labels` hides values only, optionally naming the column a value belongs to
("what is the biggest city in texas" → "what is the biggest city in state name").
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from indices.string import SpanMatch, StringIndex

if TYPE_CHECKING:
    from ukf import BaseUKF

_LITERAL = re.compile(r"'[^']*'|\"[^\"]*\"|\b\d+(?:[.,]\d+)?\b")
PLACEHOLDERS = {"table": "TABLE", "column": "COLUMN", "enum": "ENUM", "metric": "METRIC"}
SCHEMA_TYPES = frozenset({"table", "column", "metric"})

Label = Callable[[SpanMatch], str | None]


@dataclass(frozen=True)
class Entity:
    """What sketching needs to know about an entry a span matched.

    Attributes:
        type: The UKF type.
        surfaces: Its name and synonyms, lower-cased with single spaces.
        column: An enum value's column.
    """

    type: str
    surfaces: frozenset[str] = frozenset()
    column: str | None = None


def surface(text: str) -> str:
    return " ".join(text.lower().split())


class QuerySketcher:
    """Replaces entity mentions by placeholders.

    Args:
        strings: The synonym index used to find entity mentions.
        type_of: Maps a UKF id to its type (e.g. a dict's ``get`` or a graph lookup).
        mask: The entity types replaced by placeholders; leaving tables and columns in keeps
            the words that decide the SQL's shape and hides only the values.
        label: Decides a match's placeholder instead (None keeps its words), e.g.
            :func:`value_labels`; ``type_of`` and ``mask`` are then unused.
    """

    def __init__(
        self,
        strings: StringIndex,
        type_of: Callable[[str], str | None] | None = None,
        *,
        mask: Iterable[str] = ("enum", "column", "table", "metric"),
        label: Label | None = None,
    ) -> None:
        if type_of is None and label is None:
            raise ValueError("QuerySketcher needs type_of or label")
        self.strings = strings
        self.type_of = type_of
        self.mask = tuple(kind for kind in ("enum", "column", "table", "metric") if kind in mask)
        self.label = label or self._placeholder

    def _placeholder(self, match: SpanMatch) -> str | None:
        type_of = self.type_of
        assert type_of is not None  # __init__ requires it when there is no label
        types = {type_of(uid) for uid in match.ukf_ids}
        for kind in ("enum", "column", "table", "metric"):
            if kind in types:
                return f"[{PLACEHOLDERS[kind]}]" if kind in self.mask else None
        return None

    def sketch(self, question: str, matches: list[SpanMatch] | None = None) -> str:
        """The sketch of ``question``; ``matches``: its longest string matches, if known."""
        if matches is None:
            matches = self.strings.search(question, mode="longest")
        spans: list[tuple[int, int, str]] = []
        for match in matches:
            label = self.label(match)
            if label is not None:
                spans.append((match.start, match.end, label))
        for literal in _LITERAL.finditer(question):
            if all(literal.end() <= s or literal.start() >= e for s, e, _ in spans):
                spans.append((literal.start(), literal.end(), "[VALUE]"))
        out, cursor = [], 0
        for start, end, label in sorted(spans):
            out += [question[cursor:start], label]
            cursor = end
        out.append(question[cursor:])
        return " ".join("".join(out).split())


def value_labels(entity_of: Callable[[str], Entity | None], *, typed: bool) -> Label:
    """A labelling policy that hides values only.

    A match is a value when the question spells one of an enum's surfaces (not just the same
    lemmas: "longest" is not the value "Long") and no table, column or metric has that phrase
    (those words decide the SQL's shape: "highest point" stays). ``typed`` names the value's
    column in words ("state name"; when the value sits in several columns, the column name it
    has most often), else the placeholder is ``[ENUM]``.
    """

    def label(match: SpanMatch) -> str | None:
        found = [e for uid in match.ukf_ids if (e := entity_of(uid)) is not None]
        if any(e.type in SCHEMA_TYPES for e in found):
            return None
        spelled = surface(match.text)
        values = [e for e in found if e.type == "enum" and spelled in e.surfaces]
        if not values:
            return None
        if not typed:
            return "[ENUM]"
        columns = Counter(e.column for e in values if e.column)
        if not columns:
            return "[ENUM]"
        best = min(columns, key=lambda c: (-columns[c], c))
        return best.replace("_", " ").lower()

    return label


def entity_of(entry: BaseUKF) -> Entity:
    """A schema entry as the sketcher sees it: type, surface phrases, column of an enum."""
    phrases = [entry.name, *entry.synonyms]
    column = entry.content_resources.get("column") if entry.type == "enum" else None
    return Entity(entry.type, frozenset(surface(p) for p in phrases), column)
