"""Running a synthetic statement, and what makes its result worth a question.

A result says nothing when the statement failed, returned no row, returned only NULLs, or is
one aggregate of 0 or NULL (``COUNT(*)`` of nothing). A ``compose`` or ``vary`` variant whose
result is the source's is no new question either. Results are compared as BIRD's execution
accuracy compares them (``bench.metrics.exact.execution_accuracy``, which the agents cannot
import): the same *set* of rows, values normalised (numbers to 6 decimals, whole floats as
integers), row order and duplicates ignored, columns in order.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from kb.target.database import Database
from kb.target.results import Results

MAX_ROWS = 1000
"""Rows fetched from a synthetic statement (and from the back-check's answer)."""
DIGITS = 6


def run(database: Database, sql: str) -> Results:
    """``sql`` executed read-only on ``database`` (the guard refuses anything but a query)."""
    return database.execute(sql, max_rows=MAX_ROWS)


def degenerate(results: Results) -> str | None:
    """Why ``results`` says nothing (None: it says something); see the module docstring."""
    if not results.ok:
        return f"failed: {results.error}"
    if results.row_count == 0:
        return "empty result"
    if all(value is None for row in results.rows for value in row):
        return "only NULL values"
    if results.row_count == 1 and len(results.rows[0]) == 1 and results.rows[0][0] in (0, None):
        return "a single 0 or NULL aggregate"
    return None


def same_result(left: Results, right: Results) -> bool:
    """Whether two results hold the same set of (normalised) rows."""
    return _rows(left) == _rows(right)


def _rows(results: Results) -> set[tuple[Any, ...]]:
    return {tuple(_normal(v) for v in row) for row in results.rows}


def _normal(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, Decimal):
        value = float(value)
    if isinstance(value, float):
        rounded = round(value, DIGITS)
        return int(rounded) if rounded.is_integer() else rounded
    if isinstance(value, bytes):
        return value.hex()
    return value
