"""Key columns of a document's table checked against the target database.

A table column whose cells are all distinct short codes (``| NV200 | Nova 200 | Comet |``)
and that no profiled enum anchors (the profile lists no enum for a column of unique values,
such as a dimension's primary key) may still name stored values: :func:`stored_column` asks
the target, through :meth:`SchemaView.value_check`, which column holds at least
:data:`MIN_SHARE` of the cells. Columns whose name shares a word with the header are asked
first, then the others, the smallest table first (the dimension), at most
:data:`MAX_COLUMNS` of them. A row's cell in that column is then an anchor like an enum
value; a phrase of the row becomes a :class:`ukf.PredicateUKF` ``table.column = 'value'``,
as :func:`agents.learn.documents.build._value` makes it for a value on the target that is no
enum.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from sqlglot import expressions as exp

from agents.learn.documents.build import Origin
from agents.learn.mine.entries import phrase_name
from agents.learn.mine.schema_view import SchemaView
from ukf import BaseUKF, PredicateUKF

MIN_SHARE = 0.8
MAX_COLUMNS = 12
_CODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-./]{0,23}$")
_LETTER = re.compile(r"[A-Za-z]")


@dataclass(frozen=True)
class StoredValue:
    """A cell found in a column of the target that holds no profiled enum."""

    column: BaseUKF
    value: str

    @property
    def table(self) -> str:
        return str(self.column.content_resources["table"])

    def predicate(self, phrase: str, origin: Origin) -> PredicateUKF:
        """``phrase`` means ``table.column = 'value'`` (a value mapping without an enum)."""
        r = self.column.content_resources
        literal = exp.convert(self.value).sql()
        return PredicateUKF.create(
            phrase_name(phrase),
            f"{r['table']}.{r['column']} = {literal}",
            database=origin.database,
            columns=[self.column],
            **origin.fields("table_row"),
        )


def is_code_column(cells: list[str]) -> bool:
    """Whether ``cells`` are at least two distinct short codes (one token with a letter:
    ``NV200``, not a number or a date)."""
    folded = [c.casefold() for c in cells]
    return (
        len(cells) >= 2
        and len(set(folded)) == len(folded)
        and all(_CODE.match(c) and _LETTER.search(c) for c in cells)
    )


def stored_column(view: SchemaView, header: str, cells: list[str]) -> BaseUKF | None:
    """The target column holding at least :data:`MIN_SHARE` of ``cells``, or None (no
    target, or no such column among the :data:`MAX_COLUMNS` asked)."""
    if view.target is None or not is_code_column(cells):
        return None
    need = math.ceil(MIN_SHARE * len(cells))
    for column in _candidates(view, header)[:MAX_COLUMNS]:
        found = missed = 0
        for cell in cells:
            if view.value_check(column, cell) == "found":
                found += 1
            else:
                missed += 1
                if missed > len(cells) - need:
                    break
        if found >= need:
            return column
    return None


def _candidates(view: SchemaView, header: str) -> list[BaseUKF]:
    """Text columns holding no profiled enum: those named like ``header`` first, then the
    smallest table's."""
    words = set(header.split())

    def rank(key: tuple[str, str]) -> tuple[bool, int, str]:
        table = view.tables.get(key[0])
        rows = table.content_resources.get("row_count") if table is not None else None
        size = int(str(rows)) if str(rows).isdigit() else 1 << 62
        return (not words & set(re.split(r"[_\s]+", key[1])), size, "/".join(key))

    keys = [k for k, c in view.columns.items() if k not in view.enums and not view.is_numeric(c)]
    return [view.columns[k] for k in sorted(keys, key=rank)]
