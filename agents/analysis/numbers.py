"""The number check: every number a finding states must be one the evidence or the computed
facts hold.

Numbers are read from text with one pattern (thousands separators and a ``%`` allowed; a
number glued to a letter, like ``Q3`` or ``q2``, is not one), from the evidence's cells the
same way (so a date ``2024-03`` gives 2024 and 3 on both sides). Signs are ignored ("fell by
12" cites a change of -12). Two numbers match when they agree to two significant digits of
the known one; a percentage matches in either form (``12%`` matches 12 and 0.12, a plain
0.12 matches 12 too).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

NUMBER = re.compile(
    r"(?<![A-Za-z_\d.])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?:[eE]([-+]?\d+))?(\s*%|\s*percent\b)?"
)


def numbers_in_text(text: str) -> list[tuple[str, float, bool]]:
    """``(as written, value, is a percentage)`` for each number in ``text``."""
    found = []
    for match in NUMBER.finditer(text):
        whole, fraction, exponent, percent = match.groups()
        value = float(whole.replace(",", "") + (fraction or ""))
        if exponent:
            value *= 10 ** int(exponent)
        found.append((match.group(0).strip(), value, bool(percent)))
    return found


def known_numbers(values: Iterable[Any]) -> list[float]:
    """The absolute values of every number in ``values`` (cells, facts), text cells read."""
    known: list[float] = []
    for value in values:
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int | float):
            if math.isfinite(float(value)):
                known.append(abs(float(value)))
        else:
            known.extend(abs(n) for _, n, _ in numbers_in_text(str(value)))
    return known


def matches(stated: float, known: float) -> bool:
    """``stated`` is ``known`` to two significant digits of ``known``."""
    stated, known = abs(stated), abs(known)
    if known == 0 or stated == 0:
        return stated == known
    unit = 10 ** (math.floor(math.log10(known)) - 1)
    return abs(stated - known) <= unit / 2 + 1e-12 or round_sig(stated) == round_sig(known)


def round_sig(value: float, digits: int = 2) -> float:
    return round(value, digits - 1 - math.floor(math.log10(abs(value)))) if value else 0.0


def unsupported_number(text: str, known: Sequence[float]) -> str | None:
    """The first number stated in ``text`` that none of ``known`` supports (None: all are)."""
    for written, value, percent in numbers_in_text(text):
        # a percentage in either form: 12% is 12 or 0.12; a plain 0.12 may be 12%
        forms = (value, value / 100) if percent else (value, value * 100)
        if not any(matches(form, k) for form in forms for k in known):
            return written
    return None
