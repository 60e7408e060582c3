"""When a business rule a document states applies: its time phrase as the arguments of the
``query_time_window`` trigger ("before the 10th of the month" → days 1 to 9)."""

from __future__ import annotations

import re
from typing import Any

_MONTHS = {
    m: i
    for i, m in enumerate(
        ("january", "february", "march", "april", "may", "june", "july", "august"), 1
    )
} | {"september": 9, "october": 10, "november": 11, "december": 12}
_BEFORE = re.compile(r"\b(?:before|until|up to)\s+the\s+(\d{1,2})(?:st|nd|rd|th)?\b", re.I)
_FROM = re.compile(r"\b(?:from|after|on or after|since)\s+the\s+(\d{1,2})(?:st|nd|rd|th)?\b", re.I)


def time_window(text: str) -> dict[str, Any]:
    """``query_time_window`` arguments for a time phrase: "before the 10th" → day 1-9,
    "from the 10th" → day 10 on, month names → ``months``; ``{}`` when none is recognised."""
    window: dict[str, Any] = {}
    before, since = _BEFORE.search(text), _FROM.search(text)
    if before and 1 < int(before.group(1)) <= 31:
        window["day_of_month_to"] = int(before.group(1)) - 1
    if since and 1 <= int(since.group(1)) <= 31:
        window["day_of_month_from"] = int(since.group(1))
    months = [n for word, n in _MONTHS.items() if re.search(rf"\b{word}\b", text, re.I)]
    if months:
        window["months"] = months
    return window
