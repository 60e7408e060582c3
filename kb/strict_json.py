"""JSON that every part of Almanac can store, index and send back: :func:`loads_strict`.

Python's ``json`` accepts documents that break things further on: ``NaN`` and ``Infinity``
(and ``1e999``, read as infinity) cannot be written back as JSON; a lone UTF-16 surrogate
(``"\\ud800"``) cannot be encoded as UTF-8, so SQLite, PostgreSQL and every JSON response
fail on it; integers beyond 64 bits overflow SQLite and PostgreSQL integer columns; and
values nested deeper than a few hundred levels exceed the serializers' recursion limits. The
HTTP server refuses such request bodies up front (:mod:`server.json_guard`) and JSON Lines
imports refuse such lines (:mod:`kb.jsonl`), each with a short message that names the
problem and where it is, never the whole value.

The checks cost a regular expression search over the text when nothing is suspect; only a
document that holds a suspect token (a ``\\uD8xx`` escape, ``NaN``, ``Infinity``, 19 or more
digits, a three-digit exponent) or many brackets is parsed with checking hooks and walked.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

MAX_DEPTH = 64
INT_MIN, INT_MAX = -(2**63), 2**63 - 1
SUSPECT_TEXT = re.compile(r"\\u[dD][89a-fA-F]|NaN|Infinity|\d{19,}|[eE][+-]?\d{3,}|[\ud800-\udfff]")
SUSPECT_BYTES = re.compile(rb"\\u[dD][89a-fA-F]|NaN|Infinity|\d{19,}|[eE][+-]?\d{3,}")
LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


class StrictJSONError(ValueError):
    """A JSON document that parses but cannot be stored or sent back; the message is short."""


def suspect(text: str | bytes) -> bool:
    """Whether ``text`` may hold something :func:`check_value` refuses (cheap; no parsing)."""
    if isinstance(text, bytes):
        found = SUSPECT_BYTES.search(text) is not None
        brackets = text.count(b"[") + text.count(b"{")
    else:
        found = SUSPECT_TEXT.search(text) is not None
        brackets = text.count("[") + text.count("{")
    return found or brackets > MAX_DEPTH


def loads_strict(text: str | bytes) -> Any:
    """``json.loads`` that refuses what :func:`check_value` refuses (:class:`StrictJSONError`).

    Malformed JSON raises ``json.JSONDecodeError`` as usual; nesting too deep for the parser
    itself is a :class:`StrictJSONError` too.
    """
    if not suspect(text):
        return json.loads(text)
    try:
        value = json.loads(text, parse_constant=_constant, parse_int=_integer, parse_float=_float)
    except RecursionError:
        raise StrictJSONError(f"nested deeper than {MAX_DEPTH} levels") from None
    check_value(value)
    return value


def check_value(value: Any) -> None:
    """Refuse lone surrogates in strings and keys, and nesting deeper than :data:`MAX_DEPTH`."""
    stack: list[tuple[Any, int, str]] = [(value, 0, "")]
    while stack:
        item, depth, where = stack.pop()
        if depth > MAX_DEPTH:
            raise StrictJSONError(f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(item, str):
            _check_text(item, f"the string at {where}" if where else "the string")
        elif isinstance(item, dict):
            for key, child in item.items():
                _check_text(key, f"a key in {where}" if where else "a key")
                stack.append((child, depth + 1, f"{where}.{_short(key)}" if where else key))
        elif isinstance(item, list):
            stack.extend((child, depth + 1, f"{where}[{i}]") for i, child in enumerate(item))


def _check_text(text: str, what: str) -> None:
    found = LONE_SURROGATE.search(text)
    if found is not None:
        code = f"\\u{ord(found.group()):04x}"
        raise StrictJSONError(
            f"{_short(what, 80)} holds a lone UTF-16 surrogate ({code}); text must be valid Unicode"
        )


def _short(text: str, limit: int = 60) -> str:
    clean = LONE_SURROGATE.sub("\ufffd", text)
    return clean if len(clean) <= limit else clean[: limit - 1] + "…"


def _constant(name: str) -> float:
    raise StrictJSONError(f"{name} is not a JSON number; numbers must be finite")


def _integer(digits: str) -> int:
    if len(digits.lstrip("-")) > 19:
        raise StrictJSONError(f"an integer of {len(digits.lstrip('-'))} digits is out of range")
    value = int(digits)
    if not INT_MIN <= value <= INT_MAX:
        raise StrictJSONError(f"the integer {digits} is out of range (64-bit signed)")
    return value


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise StrictJSONError(f"the number {_short(text, 30)} is out of range (not finite)")
    return value
