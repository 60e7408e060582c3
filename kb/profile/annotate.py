"""Semantic type annotation of a column by rules (RubikSQL §4.2.1).

The rules, first match wins:

1. **temporal** — a DATE / TIME / TIMESTAMP / DATETIME type, or values that are dates/times.
2. **identifier** — a *key column* (primary-key or foreign-key member, or a name like ``id``,
   ``*_id``, ``*_key``, ``*Id``, ``*ID``) whose values are integers or code-like strings (no
   spaces, with a digit or upper-case, e.g. ``'ABW'``, ``'P-0012'``).
3. **categorical** — booleans, and 0/1 flags stored as numbers or text (3 rows or more).
4. **temporal** — strings that all parse with one detected ``strptime`` format.
5. **identifier** — unique, dense integers (range ≤ 2 × count) with at least
   ``identifier_min_unique`` values; unique code-like strings (at least 20 rows).
6. **numeric** — numbers, or text whose values are all numbers (``'1992'``, no leading zeros).
7. **text** — strings at least ``text_min_mean_length`` long on average (free-form).
8. **categorical** — strings with at most ``categorical_max_distinct`` classes or a distinct
   ratio of at most ``categorical_max_ratio``.
9. **text** — every other column (high-cardinality strings, binary and other values).

A column without any non-null value gets its type from the declared type (keys: identifier).
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from kb.profile.model import ProfileOptions, SemanticType
from kb.profile.temporal import FormatMatch, detect_format
from kb.target.results import to_jsonable
from ukf import canonical_json

_CAMEL_ID = re.compile(r"(?<=[a-z0-9])(Id|ID)$")
_CODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-./:#]*$")
_NUMBER = re.compile(r"^[+-]?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$|^[+-]?\.\d+$")
_FAMILIES = (
    ("BOOL", "boolean"),
    ("INTERVAL", "other"),
    ("POINT", "other"),
    ("INT", "integer"),
    ("SERIAL", "integer"),
    ("REAL", "float"),
    ("FLOA", "float"),
    ("DOUB", "float"),
    ("NUMERIC", "float"),
    ("DECIMAL", "float"),
    ("NUMBER", "float"),
    ("MONEY", "float"),
    ("DATE", "temporal"),
    ("TIME", "temporal"),
    ("CHAR", "string"),
    ("TEXT", "string"),
    ("CLOB", "string"),
    ("STRING", "string"),
    ("BLOB", "binary"),
    ("BYTEA", "binary"),
    ("BINARY", "binary"),
)
NUMERIC_TEXT_SHARE = 0.98  # share of distinct strings that must be numbers for numeric text
CODE_SHARE = 0.95
MIN_UNIQUE_CODES = 20
MIN_FLAG_ROWS = 3  # 0/1 numbers in at least this many rows are flags (categorical)
CODE_PROBE = 2_000


def declared_family(data_type: str) -> str:
    """``integer``, ``float``, ``boolean``, ``temporal``, ``string``, ``binary``, ``other``
    or ``""`` (no declared type) for a SQL type name."""
    upper = data_type.upper()
    if not upper.strip():
        return ""
    return next((family for key, family in _FAMILIES if key in upper), "other")


def is_key_name(name: str) -> bool:
    """``id``, ``singer_id``, ``id_card``, ``StuID``, ``countryId``: names that denote keys."""
    lower = name.lower()
    return (
        lower in ("id", "key")
        or lower.endswith(("_id", "_key"))
        or lower.startswith("id_")
        or _CAMEL_ID.search(name) is not None
    )


def is_code(value: str) -> bool:
    """Code-like: one token of letters, digits and ``_-./:#`` with a digit or all upper-case."""
    if len(value) > 40 or not _CODE.match(value):
        return False
    return any(ch.isdigit() for ch in value) or (value.isupper() and len(value) <= 6)


def normalize_value(value: Any) -> Any:
    """A database value as a hashable, JSON-friendly Python value (dates stay dates)."""
    if value is None or isinstance(value, (bool, int, str, dt.date, dt.time)):
        return value
    if isinstance(value, float):
        return None if value != value else value  # NaN counts as missing
    if isinstance(value, Decimal):
        if not value.is_finite():
            return None
        exponent = value.as_tuple().exponent  # an int: the value is finite
        return int(value) if isinstance(exponent, int) and exponent >= 0 else float(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<{len(bytes(value))} bytes>"
    plain = to_jsonable(value)
    return plain if isinstance(plain, (str, int, float, bool)) else canonical_json(plain)


def _family(kind: type) -> str:
    if issubclass(kind, bool):
        return "boolean"
    if issubclass(kind, (int, float)):
        return "number"
    if issubclass(kind, str):
        return "string"
    return "temporal" if issubclass(kind, (dt.date, dt.time)) else "other"


@dataclass
class ValueFacts:
    """What the sampled non-null values of a column look like."""

    values: list[Any]
    family: str  # commonest of number / string / boolean / temporal / other ("" when none)
    numbers: list[int | float]  # numeric values, parsed from text when ``numeric_text``
    numeric_text: bool
    integer: bool  # every number is an int
    code_share: float  # share of distinct strings that are code-like
    mean_length: float  # of the string values
    temporal: FormatMatch | None  # detected format of the string values

    @property
    def strings(self) -> list[str]:
        """The string values."""
        return [v for v in self.values if isinstance(v, str)]


def value_facts(values: list[Any]) -> ValueFacts:
    """Facts about non-null, normalised sample values."""
    families: Counter[str] = Counter()
    for kind, count in Counter(map(type, values)).items():
        families[_family(kind)] += count
    family = families.most_common(1)[0][0] if families else ""
    strings = [v for v in values if isinstance(v, str)]
    numbers: list[int | float] = [
        v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)
    ]
    numeric_text, code_share, temporal = False, 0.0, None
    if family == "string":
        distinct = list(dict.fromkeys(strings))
        numeric = [s for s in distinct if _NUMBER.match(s)]
        numeric_text = len(numeric) >= NUMERIC_TEXT_SHARE * len(distinct)
        if numeric_text:
            numbers = [_to_number(s) for s in strings if _NUMBER.match(s)]
        probe = distinct[:CODE_PROBE]
        code_share = sum(map(is_code, probe)) / len(probe)
        temporal = detect_format(distinct)
    return ValueFacts(
        values=values,
        family=family,
        numbers=[n for n in numbers if n == n and abs(n) != float("inf")],
        numeric_text=numeric_text,
        integer=bool(numbers) and all(isinstance(n, int) for n in numbers),
        code_share=code_share,
        mean_length=sum(map(len, strings)) / len(strings) if strings else 0.0,
        temporal=temporal,
    )


def _to_number(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        return float(text)


@dataclass(frozen=True)
class ColumnShape:
    """Counts the rules need, exact or estimated."""

    name: str
    declared: str  # declared_family(...)
    key: bool  # primary-key or foreign-key member
    non_null: int
    distinct: int
    row_count: int


def annotate(shape: ColumnShape, facts: ValueFacts, options: ProfileOptions) -> SemanticType:
    """The semantic type of a column by the rules in the module docstring."""
    key = shape.key or is_key_name(shape.name)
    if not facts.values:
        return _by_declared_type(shape.declared, key)
    if shape.declared == "temporal" or facts.family == "temporal":
        return "temporal"
    codes = facts.family == "string" and facts.code_share >= CODE_SHARE
    if key and ((facts.integer and facts.family in ("number", "string")) or codes):
        return "identifier"
    if shape.declared == "boolean" or facts.family == "boolean":
        return "categorical"
    if facts.temporal is not None:
        return "temporal"
    unique = shape.distinct >= shape.non_null
    if facts.family == "number" or facts.numeric_text:
        if shape.non_null >= MIN_FLAG_ROWS and set(facts.numbers) <= {0, 1}:
            return "categorical"
        dense = facts.integer and max(facts.numbers) - min(facts.numbers) < 2 * shape.distinct
        if unique and dense and shape.distinct >= options.identifier_min_unique:
            return "identifier"
        return "numeric"
    if facts.family != "string":
        return "text"
    if unique and codes and shape.non_null >= MIN_UNIQUE_CODES:
        return "identifier"
    if facts.mean_length >= options.text_min_mean_length:
        return "text"
    ratio = shape.distinct / shape.non_null if shape.non_null else 0.0
    few = shape.distinct <= options.categorical_max_distinct
    return "categorical" if few or ratio <= options.categorical_max_ratio else "text"


def _by_declared_type(declared: str, key: bool) -> SemanticType:
    if key:
        return "identifier"
    if declared in ("integer", "float"):
        return "numeric"
    if declared == "temporal":
        return "temporal"
    return "categorical" if declared == "boolean" else "text"
