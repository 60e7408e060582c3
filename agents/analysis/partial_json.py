"""Reading a JSON reply that the model's token budget cut off.

A reply constrained by a JSON schema is valid JSON only when the model finishes it; one cut
at ``max_tokens`` ends inside a string or an array (``{"findings": [{"text": "A"}, {"te``).
:func:`parse_cut_json` keeps what the model completed: it cuts the text back to the last
value that ended (a closed string, object or array), drops a dangling comma or key, closes
the containers still open, and parses that. The elements the model finished are kept whole;
the one it was writing keeps the fields it completed (a string cut half-way is dropped).
"""

from __future__ import annotations

import json
from typing import Any

_CLOSERS = {"{": "}", "[": "]"}


def parse_cut_json(text: str) -> Any:
    """``text`` parsed as JSON, or, when it was cut off, its longest prefix that ends after a
    complete value, with the open containers closed. Raises :class:`ValueError` (naming the
    text's start) when no prefix parses."""
    body = text.strip().removeprefix("```json").removeprefix("```").removesuffix("```").strip()
    try:
        return json.loads(body)
    except json.JSONDecodeError:
        pass
    for end, stack in reversed(_value_ends(body)):
        prefix = body[:end].rstrip()
        candidate = prefix + "".join(_CLOSERS[c] for c in reversed(stack))
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            continue  # a key string, or a value left half-way in an object: cut further back
    raise ValueError(f"no complete JSON value at the start of {body[:80]!r}")


def _value_ends(text: str) -> list[tuple[int, list[str]]]:
    """Positions just after a string, object or array closed, with the containers still open
    there (outermost first)."""
    ends: list[tuple[int, list[str]]] = []
    stack: list[str] = []
    in_string = escaped = False
    for i, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
                ends.append((i + 1, list(stack)))
            continue
        if char == '"':
            in_string = True
        elif char in _CLOSERS:
            stack.append(char)
        elif char in "}]":
            if not stack or _CLOSERS[stack[-1]] != char:
                break  # not JSON past this point
            stack.pop()
            ends.append((i + 1, list(stack)))
    return ends
