"""The outcome of one read-only query: rows, or an error that says what went wrong.

Values in ``Results.rows`` are JSON-friendly Python (see ``to_jsonable``):

| database value                      | in ``rows``                              |
|-------------------------------------|------------------------------------------|
| NULL, bool, int, float, str         | unchanged (NaN and infinities included)  |
| Decimal (NUMERIC)                   | float (precision beyond 15-17 digits is lost) |
| datetime, date, time                | ISO 8601 string (``isoformat()``)        |
| timedelta (INTERVAL)                | float seconds                            |
| bytes, bytearray, memoryview (BLOB) | lower-case hex string                    |
| UUID                                | canonical string                         |
| list / tuple (ARRAY), dict (JSON)   | list / dict with converted values        |
| anything else (ranges, inet, ...)   | ``str(value)``                           |
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

ErrorKind = Literal["refused", "timeout", "sql", "connection"]


@dataclass(frozen=True)
class Results:
    """Rows of a read-only query, or the reason there are none.

    Attributes:
        columns: column names in select-list order (duplicates kept).
        rows: at most the row cap, as tuples of JSON-friendly values.
        truncated: more rows existed than were fetched; ``row_count`` is then a lower bound.
        elapsed: seconds spent checking, running and fetching.
        sql: the statement that ran (normalised by the guard), or the SQL as given on refusal.
        error: what went wrong, with a snippet of the offending SQL; None on success.
        error_kind: ``refused`` (guard), ``timeout``, ``sql`` (rejected by the database) or
            ``connection`` (database unreachable); None on success.
        row_count: ``len(rows)``; "at least" when ``truncated``.
    """

    columns: list[str] = field(default_factory=list)
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    truncated: bool = False
    elapsed: float = 0.0
    sql: str = ""
    error: str | None = None
    error_kind: ErrorKind | None = None
    row_count: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "row_count", len(self.rows))

    @property
    def ok(self) -> bool:
        """True when the query ran (an empty result is still ok)."""
        return self.error is None

    @property
    def has_data(self) -> bool:
        """Some row holds a non-NULL value: an aggregate over no rows (``SUM`` of a filter
        that matches nothing) gives one all-NULL row, which is no answer either."""
        return self.truncated or any(v is not None for row in self.rows for v in row)

    @classmethod
    def failure(cls, kind: ErrorKind, message: str, *, sql: str, elapsed: float) -> Results:
        """Results carrying only an error of ``kind``."""
        return cls(sql=sql, elapsed=elapsed, error=message, error_kind=kind)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (rows as lists)."""
        return {
            "columns": list(self.columns),
            "rows": [list(row) for row in self.rows],
            "truncated": self.truncated,
            "row_count": self.row_count,
            "elapsed": self.elapsed,
            "sql": self.sql,
            "error": self.error,
            "error_kind": self.error_kind,
        }


def to_jsonable(value: Any) -> Any:
    """Convert one database value to JSON-friendly Python (table in the module docstring)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [to_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {str(key): to_jsonable(item) for key, item in value.items()}
    return str(value)


def jsonable_rows(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """``rows`` with every value converted by ``to_jsonable`` (plain values pass untouched)."""
    plain = (type(None), bool, int, float, str)
    return [
        row if all(type(v) in plain for v in row) else tuple(to_jsonable(v) for v in row)
        for row in rows
    ]
