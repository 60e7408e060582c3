"""What the builder of a section's items checks each item with, against the profiled schema.

:mod:`agents.learn.documents.build` turns items into entries; these are its shared pieces: an
item's text and word-list fields, the schema's column a name gives (one table's, or every
table's of that name for a formula written without its table), the stored values a condition
compares with, and the schema's element names a term must not be. A failed check raises
:class:`Drop` with the reason the build counts.
"""

from __future__ import annotations

import re
from typing import Any

from sqlglot import expressions as exp

from agents.learn.documents.formula import STAND_IN
from agents.learn.mine.schema_view import SchemaView
from ukf import BaseUKF


class Drop(Exception):
    """An item that fails a check; ``reason`` is what the build counts it under."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def text_of(item: dict[str, Any], key: str) -> str:
    value = item.get(key)
    return " ".join(str(value).split()) if isinstance(value, str | int | float) else ""


def words_of(item: dict[str, Any], key: str) -> list[str]:
    value = item.get(key)
    words = value if isinstance(value, list) else []
    return list(dict.fromkeys(w for w in (" ".join(str(v).split()) for v in words) if w))


def formula_columns(view: SchemaView, table: str, column: str) -> list[BaseUKF]:
    """A formula's column: the table's, or every table's that has one so named (a document's
    formula over "report_item_level1" holds for each brand's income table)."""
    if table:
        return [schema_column(view, table, column)]
    found = [view.column(t, column) for t in sorted(view.tables)]
    owners = [entry for entry in found if entry is not None]
    if not owners:
        raise Drop("unknown_column")
    return owners


def schema_column(view: SchemaView, table: str, column: str) -> BaseUKF:
    found = view.column(table or None, column, among=list(view.tables))
    if found is None:
        raise Drop("unknown_column")
    return found


def check_literals(condition: exp.Expression, view: SchemaView) -> None:
    """Each ``column = 'value'`` / ``column IN (...)`` of a parsed condition names a value the
    column holds (:class:`Drop` ``value_not_found`` otherwise; unchecked values pass)."""
    for node in condition.find_all(exp.EQ, exp.In):
        column = node.this if isinstance(node.this, exp.Column) else None
        values = node.expressions if isinstance(node, exp.In) else [node.expression]
        if column is None or column.name.startswith(STAND_IN):
            continue
        owners = formula_columns(view, column.table, column.name)
        for value in values:
            literal = isinstance(value, exp.Literal) and value.is_string
            checks = [view.value_check(entry, value.this) for entry in owners] if literal else []
            if checks and all(check == "missing" for check in checks):
                raise Drop("value_not_found")


def element_names(view: SchemaView) -> set[str]:
    """Every table and column name of the schema, folded: a term that is one of them names
    that element, not another one."""
    names = {fold(str(t.content_resources.get("table") or t.name)) for t in view.tables.values()}
    return names | {fold(str(c.content_resources["column"])) for c in view.columns.values()}


def fold(text: str) -> str:
    return " ".join(re.split(r"[\s_\-.]+", text)).strip().casefold()
