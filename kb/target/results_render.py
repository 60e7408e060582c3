"""Render ``Results`` as a small, LLM-friendly text table.

Example (``max_rows=2``)::

    | Name | Age |
    | --- | --- |
    | Joe Sharp | 52 |
    | Timbaland | 32 |
    showing 2 of 6 rows
    statistics over all 6 fetched rows:
    - Name: 6 distinct, min 'John Nizinik', max 'Tribal King'
    - Age: 6 distinct, min 25, max 52

When rows are left out (by ``max_rows``, by ``max_chars`` or by the database row cap) the text
ends with per-column statistics over every fetched row, so that what was dropped is summarised.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from kb.target.results import Results

MAX_CELL_CHARS = 60


def render_results(results: Results, *, max_rows: int = 20, max_chars: int = 4000) -> str:
    """A compact Markdown table of ``results`` that fits in ``max_chars`` characters.

    Args:
        results: the outcome of ``Database.execute``.
        max_rows: at most this many rows are shown.
        max_chars: upper bound on the length of the returned text.

    Returns:
        The error line for failed results; otherwise the table, a line saying how many rows
        were shown, and column statistics whenever rows were left out.
    """
    if not results.ok:
        return _cut(f"ERROR ({results.error_kind}): {results.error}", max_chars)
    if not results.columns:
        return "(the query returned no columns)"
    header = [_row_line(results.columns), _row_line(["---"] * len(results.columns))]
    if not results.rows:
        return _cut("\n".join([*header, "(no rows)"]), max_chars)
    lines = [_row_line([_cell(v) for v in row]) for row in results.rows[:max_rows]]
    if len(lines) == results.row_count and not results.truncated:
        text = "\n".join([*header, *lines, _count_line(results, len(lines))])
        if len(text) <= max_chars:
            return text
    stats = _statistics(results, max_chars // 2)
    budget = max_chars - len(stats) - sum(len(line) + 1 for line in header) - 80
    shown: list[str] = []
    for line in lines:
        if budget - len(line) - 1 < 0:
            break
        shown.append(line)
        budget -= len(line) + 1
    return _cut("\n".join([*header, *shown, _count_line(results, len(shown)), stats]), max_chars)


def column_statistics(columns: Sequence[str], rows: Sequence[tuple[Any, ...]]) -> list[str]:
    """One line per column: distinct count, nulls, min and max over ``rows``.

    Numbers order numerically; other values (or mixed columns) order by their text.
    """
    lines = []
    for index, name in enumerate(columns):
        values = [row[index] for row in rows]
        present = [v for v in values if v is not None]
        parts = [f"{len({_hashable(v) for v in present})} distinct"]
        if len(present) < len(values):
            parts.append(f"{len(values) - len(present)} null")
        if present:
            ordered = present if all(map(_is_number, present)) else list(map(_text, present))
            low, high = min(ordered), max(ordered)
            parts.append(f"min {_stat_value(low)}, max {_stat_value(high)}")
        lines.append(f"- {name}: {', '.join(parts)}")
    return lines


def _statistics(results: Results, budget: int) -> str:
    """The statistics block, cut to whole lines within ``budget`` characters."""
    lines = [f"statistics over all {results.row_count:,} fetched rows:"]
    per_column = column_statistics(results.columns, results.rows)
    used = len(lines[0])
    for index, line in enumerate(per_column):
        if used + len(line) + 40 > budget and index < len(per_column) - 1:
            lines.append(f"- ... {len(per_column) - index} more columns")
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines)


def _count_line(results: Results, shown: int) -> str:
    if results.truncated:
        total = f"at least {results.row_count + 1:,} rows (row limit {results.row_count:,} reached)"
    else:
        total = f"{results.row_count:,} row{'s' if results.row_count != 1 else ''}"
    return total if shown == results.row_count else f"showing {shown:,} of {total}"


def _row_line(cells: Sequence[str]) -> str:
    return "| " + " | ".join(_escape(str(c)) for c in cells) + " |"


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, float):
        return format(value, ".10g")
    return _shorten(_text(value))


def _text(value: Any) -> str:
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def _stat_value(value: Any) -> str:
    return _cell(value) if _is_number(value) else repr(_shorten(_text(value), 40))


def _shorten(text: str, limit: int = MAX_CELL_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _hashable(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


def _cut(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[: max(0, max_chars - 1)] + "…"


def _is_number(value: Any) -> bool:
    """Ints and finite floats (not bools): values that order numerically."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))
