"""Query sketches: a question with its entities replaced by type placeholders.

"List the names of top 3 singers from France" becomes
"List the [COLUMN] of top [VALUE] [TABLE] from [ENUM]": questions that differ only in the
entities they mention get the same sketch, so similar experiences are found by structure.
Entities come from the string index (longest non-overlapping matches); numbers and quoted
strings become ``[VALUE]``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from indices.string import StringIndex

_LITERAL = re.compile(r"'[^']*'|\"[^\"]*\"|\b\d+(?:[.,]\d+)?\b")
PLACEHOLDERS = {"table": "TABLE", "column": "COLUMN", "enum": "ENUM", "metric": "METRIC"}


class QuerySketcher:
    """Replaces entity mentions by ``[TYPE]`` placeholders.

    Args:
        strings: The synonym index used to find entity mentions.
        type_of: Maps a UKF id to its type (e.g. a dict's ``get`` or a graph lookup).
        mask: The entity types replaced by placeholders; leaving tables and columns in keeps
            the words that decide the SQL's shape and hides only the values.
    """

    def __init__(
        self,
        strings: StringIndex,
        type_of: Callable[[str], str | None],
        *,
        mask: Iterable[str] = ("enum", "column", "table", "metric"),
    ) -> None:
        self.strings = strings
        self.type_of = type_of
        self.mask = tuple(kind for kind in ("enum", "column", "table", "metric") if kind in mask)

    def _placeholder(self, ukf_ids: tuple[str, ...]) -> str | None:
        types = {self.type_of(uid) for uid in ukf_ids}
        for kind in ("enum", "column", "table", "metric"):
            if kind in types:
                return f"[{PLACEHOLDERS[kind]}]" if kind in self.mask else None
        return None

    def sketch(self, question: str) -> str:
        spans: list[tuple[int, int, str]] = []
        for match in self.strings.search(question, mode="longest"):
            label = self._placeholder(match.ukf_ids)
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
