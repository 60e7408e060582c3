"""Tags of the form ``[SLOT:value]``.

A slot is an upper-case identifier (``DATABASE``, ``TABLE``, ``TRAIT``); the value is any
non-empty text without line breaks. The first colon separates slot and value, so values may hold
colons (``[TIME:2025-01-01T10:00]``). Tags are normalised (slot upper-cased, value stripped),
de-duplicated and sorted, so the same set of tags always serialises the same way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

from ukf.errors import MalformedTagError

_TAG = re.compile(r"^\[\s*([A-Za-z][A-Za-z0-9_]*)\s*:(.+)\]$", re.DOTALL)


class Tag(NamedTuple):
    """A parsed tag."""

    slot: str
    value: str

    def __str__(self) -> str:
        return f"[{self.slot}:{self.value}]"


def parse_tag(text: str) -> Tag:
    """Parse ``[SLOT:value]``; raise :class:`MalformedTagError` naming the tag otherwise."""
    if not isinstance(text, str):
        raise MalformedTagError(f"tag must be a string like '[SLOT:value]', got {text!r}")
    match = _TAG.match(text.strip())
    if match is None:
        raise MalformedTagError(f"malformed tag {text!r}: expected '[SLOT:value]'")
    value = match.group(2).strip()
    if not value or "\n" in value or "]" in value:
        raise MalformedTagError(f"malformed tag {text!r}: the value must be one non-empty line")
    return Tag(match.group(1).upper(), value)


def format_tag(slot: str, value: object) -> str:
    """Build a normalised tag string; ``format_tag("table", "orders") == "[TABLE:orders]"``."""
    return str(parse_tag(f"[{slot}:{value}]"))


def sanitize_tag_value(value: object, max_length: int = 200) -> str:
    """Make any value usable as a tag value: one line, no ``]``, at most ``max_length``."""
    text = " ".join(str(value).split()).replace("]", ")")[:max_length].strip()
    return text or "(blank)"


def normalize_tags(tags: Iterable[str]) -> tuple[str, ...]:
    """Parse, normalise, de-duplicate and sort tags."""
    return tuple(sorted({str(parse_tag(tag)) for tag in tags}))


def tag_values(tags: Iterable[str], slot: str) -> list[str]:
    """Values of every tag in ``slot`` (case-insensitive slot), in tag order."""
    slot = slot.upper()
    return [tag.value for tag in map(parse_tag, tags) if tag.slot == slot]


def tags_by_slot(tags: Iterable[str]) -> dict[str, list[str]]:
    """Group tag values by slot."""
    grouped: dict[str, list[str]] = {}
    for tag in map(parse_tag, tags):
        grouped.setdefault(tag.slot, []).append(tag.value)
    return grouped
