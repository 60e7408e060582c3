"""One canonical form per cell value, shared by every metric.

Two cells "match" exactly when their normalised forms are equal, so every metric can use plain
``==``, sets, ``Counter`` and dictionaries on normalised rows.

Rules, in order:

* ``None`` stays ``None`` (SQL NULL matches NULL, and nothing else).
* ``bool`` becomes ``int``: SQLite has no boolean type and returns ``1``/``0`` where PostgreSQL
  returns ``True``/``False``; Python (and therefore BIRD's own scripts) already treats
  ``True == 1``. We chose compatibility over distinguishing them.
* Integers stay exact Python ``int``; numpy scalars are first converted to Python ones.
* Floats, ``Decimal`` and other reals are rounded to ``FLOAT_SIGNIFICANT_DIGITS`` significant
  digits, magnitudes below ``FLOAT_ZERO`` become ``0``, and a float whose rounded value is
  integral becomes that ``int`` (so ``1`` matches ``1.0`` and ``0.1 + 0.2`` matches ``0.3``).
  Rounding is a tolerance that can be hashed; two values closer than the tolerance may still
  land on either side of a rounding boundary, which is rare enough for evaluation.
  ``NaN`` matches ``NaN``; infinities match themselves.
* Strings stay strings, numeric-looking ones included (``'1'`` does not match ``1``).
* ``bytes``-like values become their lowercase hex string.
* Lists and tuples (PostgreSQL arrays) become tuples of normalised items; other unhashable
  values become their ``repr``; any other hashable value (dates, UUIDs) is kept as is.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from decimal import Decimal
from typing import Any, TypeAlias

import numpy as np

Result: TypeAlias = Sequence[Sequence[Any]]
"""A query result: a sequence of rows, each a sequence of cell values."""

Row: TypeAlias = tuple[Any, ...]
"""A normalised row."""

FLOAT_SIGNIFICANT_DIGITS = 10
FLOAT_ZERO = 1e-9


class _NaN:
    """The canonical NaN: unlike ``float('nan')``, it is equal to itself."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NaN"


NAN = _NaN()


def _normalize_float(x: float) -> Any:
    if math.isnan(x):
        return NAN
    if math.isinf(x):
        return x
    if abs(x) < FLOAT_ZERO:
        return 0
    rounded = float(f"{x:.{FLOAT_SIGNIFICANT_DIGITS}g}")
    return int(rounded) if rounded.is_integer() else rounded


def _normalize_decimal(d: Decimal) -> Any:
    if d.is_nan():
        return NAN
    if d.is_finite() and d == d.to_integral_value():
        return int(d)
    return _normalize_float(float(d))


def _normalize_other(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, np.generic):  # numpy scalars, np.bool_ and np.str_ included
        return normalize_value(value.item())
    if isinstance(value, numbers.Integral):  # bool, int subclasses
        return int(value)
    if isinstance(value, Decimal):
        return _normalize_decimal(value)
    if isinstance(value, numbers.Real):  # float subclasses, Fraction
        return _normalize_float(float(value))
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (list, tuple)):
        return tuple(normalize_value(v) for v in value)
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


def _identity(value: Any) -> Any:
    return value


_BY_EXACT_TYPE = {str: _identity, int: _identity, type(None): _identity, float: _normalize_float}


def normalize_value(value: Any) -> Any:
    """Return the canonical, hashable form of one cell value (see the module docstring).

    Args:
        value: A cell as returned by a DB-API driver.

    Returns:
        A hashable value; two cells match exactly when their canonical forms are equal.

    Example:
        >>> normalize_value(1.0), normalize_value(0.1 + 0.2), normalize_value(True)
        (1, 0.3, 1)
    """
    fast = _BY_EXACT_TYPE.get(type(value))
    return fast(value) if fast is not None else _normalize_other(value)


def normalize_row(row: Sequence[Any]) -> Row:
    """Normalise every cell of a row into a tuple."""
    return tuple(map(normalize_value, row))


def normalize_rows(rows: Result) -> list[Row]:
    """Normalise every row of a result, keeping order and duplicates."""
    return [normalize_row(row) for row in rows]
