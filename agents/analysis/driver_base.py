"""A chain query read as a measure in one period: the base of a driver search.

:func:`driver_base` reads ``SELECT [breakdowns,] <aggregates> FROM <one table> WHERE
<time column> = <value> AND ... [GROUP BY breakdowns]``: the period (the equalities on time
columns, year first), the other conditions, the aggregates and the query's own breakdowns.
:func:`year_earlier` shifts a period's values back a year. See :mod:`agents.analysis.drivers`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from agents.analysis.plan import TIME_NAMES
from agents.analysis.series_repair import and_conditions, one_select

GRAIN = [("year", 0), ("quarter", 1), ("month", 2), ("period", 2), ("week", 3), ("day", 4)]
YEAR = re.compile(r"(19|20)\d{2}")


@dataclass(frozen=True)
class DriverBase:
    """What a chain query says about a measure in a period: its ``table``, the ``period``
    (time column, value) equalities in order of grain (year first), the ``kept`` other
    conditions, its aggregate ``measures`` (aliased) and its own grouping ``breakdowns``."""

    table: exp.Table
    period: list[tuple[exp.Column, Any]]
    kept: list[exp.Expression]
    measures: list[exp.Expression]
    breakdowns: list[exp.Column]


def driver_base(sql: str, dialect: str) -> DriverBase | None:
    """``sql`` (``dialect``: sqlglot's name) read as a measure in a period (see the
    module), or None: not one SELECT on one table, no aggregate, a window or a subquery,
    or no equality of a time column with a value."""
    tree = one_select(sql, dialect)
    if tree is None or tree.args.get("joins") or tree.find(exp.Subquery):
        return None
    source = tree.args.get("from_")
    if source is None or not isinstance(source.this, exp.Table):
        return None
    group = tree.args.get("group")
    grouped = [g for g in (group.expressions if group else []) if isinstance(g, exp.Column)]
    breakdowns = [g.copy() for g in grouped if not is_time(g.name)]
    measures = [
        p if isinstance(p, exp.Alias) else exp.alias_(p, f"measure_{i}")
        for i, p in enumerate(tree.expressions, 1)
        if p.find(exp.AggFunc)
    ]
    if not measures:
        return None
    period: list[tuple[exp.Column, Any]] = []
    kept: list[exp.Expression] = []
    for condition in and_conditions(tree):
        column, value = _time_equality(condition)
        if column is not None:
            period.append((column, value))
        elif any(is_time(c.name) for c in condition.find_all(exp.Column)):
            return None  # a range or an OR on a time column: no single period named
        else:
            kept.append(condition)
    if not period:
        return None
    period.sort(key=lambda pair: _grain(pair[0].name))
    return DriverBase(source.this, period, kept, measures, breakdowns)


def year_earlier(values: Sequence[Any]) -> list[Any] | None:
    """``values`` (a period's time values) a year earlier: a year number one less, the
    first year in a text one less ("FY2025" -> "FY2024", "202502" -> "202402"); None when
    no value holds a year."""
    shifted: list[Any] = []
    changed = False
    for value in values:
        if isinstance(value, int) and 1900 <= value <= 2100:
            shifted.append(value - 1)
            changed = True
        elif isinstance(value, str) and (match := YEAR.search(value)):
            year = str(int(match.group(0)) - 1)
            shifted.append(value[: match.start()] + year + value[match.end() :])
            changed = True
        else:
            shifted.append(value)
    return shifted if changed else None


def _time_equality(condition: exp.Expression) -> tuple[exp.Column | None, Any]:
    """(column, value) of ``time_column = literal`` (either side), else (None, None)."""
    if not isinstance(condition, exp.EQ):
        return None, None
    left, right = condition.this, condition.expression
    if isinstance(right, exp.Column) and isinstance(left, exp.Literal):
        left, right = right, left
    if not isinstance(left, exp.Column) or not isinstance(right, exp.Literal):
        return None, None
    if not is_time(left.name):
        return None, None
    text = right.this
    value: Any = text if right.is_string else int(text) if text.isdigit() else float(text)
    return left, value


def is_time(name: str) -> bool:
    return TIME_NAMES.fullmatch(name) is not None


def _grain(name: str) -> int:
    folded = name.casefold()
    return next((rank for word, rank in GRAIN if word in folded), len(GRAIN))
