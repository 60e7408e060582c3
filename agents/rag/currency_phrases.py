"""The currency a question asks for, or the one its asker's profile implies.

"Borealis retail revenue?" asked by a user whose profile says ``currency=USD`` wants dollars;
"... in yen" wants JPY; "... in local currency" wants each country's own currency. Stating
the resolved currency next to the question is what a small model needs: the general rule
("users see amounts in their profile currency") is easy to overlook among a dozen hints.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

LOCAL = "local"
CURRENCY_NAMES: dict[str, tuple[str, ...]] = {
    "USD": ("us dollars", "us dollar", "dollars", "dollar", "usd", "$"),
    "EUR": ("euros", "euro", "eur", "€"),
    "CNY": ("renminbi", "yuan", "rmb", "cny"),
    "JPY": ("japanese yen", "yen", "jpy", "¥"),
    "GBP": ("pounds sterling", "sterling", "pounds", "pound", "gbp", "£"),
    "CHF": ("swiss francs", "swiss franc", "chf"),
    "CAD": ("canadian dollars", "canadian dollar", "cad"),
    "AUD": ("australian dollars", "australian dollar", "aud"),
    "INR": ("rupees", "rupee", "inr"),
    "BRL": ("reais", "brl"),
    "KRW": ("won", "krw"),
    "HKD": ("hong kong dollars", "hkd"),
    "SGD": ("singapore dollars", "sgd"),
    "MXN": ("mexican pesos", "mxn"),
    "AED": ("dirhams", "dirham", "aed"),
    LOCAL: ("local currency", "local currencies", "local money"),
}
# common English words: only after "in" ("in won", "in pounds")
_NEEDS_IN = {"won", "pound", "pounds"}
_SYMBOLS = {"$", "€", "£", "¥"}
LOCAL_SUFFIXES = ("_lc", "_local", "_local_currency")


def named_currency(question: str) -> tuple[str, str] | None:
    """(code or ``"local"``, the question's words) for the currency the question names."""
    best: tuple[int, str, str] | None = None
    for code, names in CURRENCY_NAMES.items():
        for name in names:
            if name in _SYMBOLS:
                index = question.find(name)
                found = (index, name) if index >= 0 else None
            else:
                prefix = r"\bin\s+" if name in _NEEDS_IN else r"\b"
                match = re.search(prefix + re.escape(name) + r"\b", question, re.I)
                found = (match.start(), match.group(0)) if match else None
            if found is not None and (best is None or found[0] < best[0]):
                best = (found[0], code, found[1])
    return (best[1], best[2]) if best else None


def answer_currency_spans(question: str) -> list[tuple[int, int]]:
    """Where the question names the currency of its answer ("in JPY"; not "local currency")."""
    named = named_currency(question)
    if named is None or named[0] == LOCAL:
        return []
    start = question.lower().find(named[1].lower())
    return [(start, start + len(named[1]))] if start >= 0 else []


def is_local_currency_column(column: str) -> bool:
    """A column of an entity's own currency (``local_currency``), not of an amount's."""
    name = column.lower()
    return "currency" in name and "local" in name


def describe_currency(
    question: str, profile: Mapping[str, Any] | None, columns: Iterable[str] = ()
) -> str:
    """One sentence on the currency of the answer, or "" when neither the question nor the
    profile says anything about currency. ``columns`` (of the tables the prompt shows) name
    the per-currency columns when there are some (``ptd_amt_eur`` -> "the *_eur columns")."""
    names = [c.lower() for c in columns]
    named = named_currency(question)
    if named is not None:
        code, words = named
        if code == LOCAL:
            return f'"{words}": amounts in each country\'s local currency{_columns(names, LOCAL)}.'
        return f'"{words}": amounts in {code}{_columns(names, code)}.'
    own = (profile or {}).get("currency")
    if isinstance(own, str) and re.fullmatch(r"[A-Za-z]{3}", own.strip()):
        code = own.strip().upper()
        return (
            f"The question names no currency: amounts in the user's currency {code}"
            f"{_columns(names, code)}."
        )
    return ""


def _columns(names: list[str], code: str) -> str:
    """ ": the *_eur columns" when some shown column ends with the currency's suffix."""
    suffixes = LOCAL_SUFFIXES if code == LOCAL else (f"_{code.lower()}",)
    for suffix in suffixes:
        if any(n.endswith(suffix) for n in names):
            return f": the *{suffix} columns"
    return ""
