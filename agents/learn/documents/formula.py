"""A metric's formula as documents write it, checked against the profiled schema.

Documents write formulas for people, not for a parser. AutoFin's metric pages say
``SUM(<amount>) WHERE report_item_level1 = 'Revenue'`` (a placeholder the page defines, "the
amount column of the time window and currency asked for", and the measure's filter after
WHERE) and ``(Revenue - Cost of sales) / Revenue`` (other metrics by name). A small model
asked for "one SQL expression" copies them as written. :func:`check_formula` accepts that
notation and checks what it can:

- a placeholder ``<name>`` (angle brackets around words, ``<amount>_py`` with a suffix) stands
  for a column the SQL writer picks at ask time: it is no column of the schema and is not
  looked up (kept in ``placeholders``);
- ``MEASURE WHERE CONDITION``: both parts must parse; the condition's compared values must
  occur in their columns (``value_not_found`` otherwise), as a predicate's do;
- the name of a metric known to the run (extracted from an earlier section, or already in
  the knowledge base) stands for that metric's value (kept in ``metrics``);
- a formula that is one placeholder or one other metric alone names no measure
  (``not_a_measure``); one that is a column alone is flagged ``lone_column``: the "metric"
  is a name for that column ("venue size" is ``stadium.Capacity``), a synonym, not a measure;
- every other identifier must be a column of the schema (``unknown_column``; without a table,
  a column several tables have counts for each of them), and the whole
  must parse as one SQL expression (``formula_unparsable``; a whole query:
  ``formula_not_expression``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

import sqlglot
from sqlglot import expressions as exp

from ukf import BaseUKF

_PLACEHOLDER = re.compile(r"<\s*([A-Za-z][\w ]*?)\s*>(\w*)")
_WHERE = re.compile(r"\s+where\s+", re.IGNORECASE)
STAND_IN = "almanac_stand_in_"


class FormulaError(ValueError):
    """A formula that fails a check: ``reason`` is the count key the extraction reports."""

    def __init__(self, reason: str, formula: str) -> None:
        super().__init__(f"{reason}: {formula!r}")
        self.reason = reason


@dataclass
class CheckedFormula:
    """What a formula names: schema columns, placeholders, other metrics, and its filter."""

    columns: list[BaseUKF] = field(default_factory=list)
    placeholders: list[str] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)
    expression: exp.Expression = field(default_factory=exp.Null)
    """The measure (the formula before any WHERE), parsed, stand-ins in place of placeholders."""
    condition: exp.Expression | None = None
    is_condition: bool = False
    """The whole formula is a condition (a named filter: a predicate, not a measure)."""
    lone_column: bool = False
    """The formula is one column and nothing else: a name for the column, not a measure."""


ColumnLookup = Callable[[str, str], list[BaseUKF]]
"""(table or "", column) → the schema's Column entries so named (the table's, or without a
table every table's that has one); raises when there is none."""


def check_formula(
    formula: str, find_column: ColumnLookup, metric_names: Collection[str] = ()
) -> CheckedFormula:
    """``formula`` checked as the module docstring says (:class:`FormulaError` when not)."""
    checked = CheckedFormula()
    stand_ins: dict[str, str] = {}
    placeholders = checked.placeholders
    text = _PLACEHOLDER.sub(lambda m: _stand_in(m.group(0), stand_ins, placeholders), formula)
    text = _name_metrics(text, metric_names, stand_ins, checked.metrics)
    measure, _, condition = _split_where(text)
    parsed = _parse(measure, formula)
    checked.condition = _parse(condition, formula) if condition else None
    found: dict[str, BaseUKF] = {}
    for part in [parsed] + ([checked.condition] if checked.condition is not None else []):
        for column in part.find_all(exp.Column):
            if column.name.startswith(STAND_IN) and not column.table:
                continue
            for entry in find_column(column.table, column.name):
                found.setdefault(entry.id, entry)
    checked.columns = list(found.values())
    checked.expression = parsed
    lone = parsed.unnest()
    if isinstance(lone, exp.Column):
        if lone.name.startswith(STAND_IN) and not lone.table:  # a placeholder or a metric
            raise FormulaError("not_a_measure", formula)
        checked.lone_column = True
    checked.is_condition = checked.condition is None and isinstance(parsed, _CONDITIONS)
    return checked


def rows_filter(checked: CheckedFormula) -> dict[str, Any] | None:
    """The default filter of a measure whose condition is one ``column = literal``
    (``SUM(<amount>) WHERE report_item_level1 = 'Revenue'``): ``{"column", "value",
    "tables"}`` (the tables of the schema the formula's column was found in), for the chain
    to add to a query that names the metric but not the column
    (:mod:`agents.sql.default_filters`); None for any other formula."""
    condition = checked.condition.unnest() if checked.condition is not None else None
    if not isinstance(condition, exp.EQ):
        return None
    column, literal = condition.this, condition.expression
    if isinstance(column, exp.Literal) and isinstance(literal, exp.Column):
        column, literal = literal, column
    if not isinstance(column, exp.Column) or not isinstance(literal, exp.Literal):
        return None
    if column.name.startswith(STAND_IN) or not column.name.isidentifier():
        return None
    text = literal.this
    value: str | int | float = text
    if not literal.is_string:
        try:
            value = int(text) if text.lstrip("-").isdigit() else float(text)
        except ValueError:
            return None
    tables = sorted(
        {
            str(c.content_resources["table"])
            for c in checked.columns
            if str(c.content_resources.get("column", "")).casefold() == column.name.casefold()
        }
    )
    return {"column": column.name, "value": value, **({"tables": tables} if tables else {})}


_CONDITIONS = (
    exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.In, exp.Like, exp.ILike,
    exp.Between, exp.And, exp.Or, exp.Not, exp.Is,
)  # fmt: skip


def _stand_in(original: str, stand_ins: dict[str, str], named: list[str]) -> str:
    key = original.casefold()
    if key not in stand_ins:
        stand_ins[key] = f"{STAND_IN}{len(stand_ins)}"
        named.append(original)
    return stand_ins[key]


def _name_metrics(
    text: str, names: Collection[str], stand_ins: dict[str, str], named: list[str]
) -> str:
    """``text`` with each metric name (longest first, whole words, outside quoted literals)
    replaced by a stand-in identifier."""
    for name in sorted((n for n in names if n.strip()), key=len, reverse=True):
        pattern = re.compile(rf"(?<![\w<]){re.escape(name)}(?![\w>])", re.IGNORECASE)

        def replace(part: str, pattern: re.Pattern[str] = pattern, name: str = name) -> str:
            return pattern.sub(lambda _match: _stand_in(name, stand_ins, named), part)

        text = _outside_quotes(text, replace)
    return text


_QUOTED = re.compile(r"('(?:[^']|'')*')")


def _outside_quotes(text: str, change: Callable[[str], str]) -> str:
    """``text`` with ``change`` applied to what lies outside its quoted literals (a metric's
    name inside ``'Revenue'`` is a value, not the metric)."""
    parts = _QUOTED.split(text)
    return "".join(part if i % 2 else change(part) for i, part in enumerate(parts))


def _split_where(text: str) -> tuple[str, str, str]:
    """``MEASURE WHERE CONDITION`` at the top level (not inside parentheses)."""
    for match in _WHERE.finditer(text):
        before = text[: match.start()]
        if before.count("(") == before.count(")"):
            return before, match.group(0), text[match.end() :]
    return text, "", ""


def _parse(text: str, formula: str) -> exp.Expression:
    try:
        parsed = sqlglot.parse_one(text)
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, ValueError):
        raise FormulaError("formula_unparsable", formula) from None
    if parsed is None:
        raise FormulaError("formula_unparsable", formula)
    if isinstance(parsed, exp.Query | exp.Command):
        raise FormulaError("formula_not_expression", formula)
    return parsed
