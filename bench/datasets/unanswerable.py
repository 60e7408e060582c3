"""Unanswerable questions: the abstention benchmark for Spider dev databases and AutoFin.

``unanswerable.jsonl`` (next to this module) holds one question per line that a well-calibrated
system should decline rather than answer with SQL::

    {"id": "ua-spider-001", "database": "concert_singer", "category": "missing_table",
     "question": "What is the average fee paid to singers per concert?", "missing": "fee",
     "why": "The database records who sang where, not what anyone was paid."}

Categories:

- ``missing_table``: asks for data the database does not hold (a concept with no table or column);
- ``impossible_period``: a time range outside the data's span, or one that cannot exist (Q5,
  the 31st of February); ``missing`` is then a period in the small grammar of `parse_period`;
- ``out_of_scope``: not a data question, or not about this database (weather, poems, share
  prices, requests to change data).

Every field is required and must be a non-empty string; unknown fields, unknown categories,
repeated ids and unparseable periods are errors that name the line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from bench.datasets.dataset import DatasetFormatError

DEFAULT_PATH = Path(__file__).with_name("unanswerable.jsonl")
HELDOUT_PATH = Path(__file__).with_name("unanswerable_heldout.jsonl")
"""Questions written after the packaged calibrator was fitted (on answers to ``DEFAULT_PATH``'s
among others): its abstention measured on questions it never saw."""
CATEGORIES = ("missing_table", "impossible_period", "out_of_scope")
FIELDS = ("id", "database", "question", "category", "missing", "why")
AUTOFIN = "autofin"
_ID = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
_DATABASE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Period:
    """A period named by an ``impossible_period`` question.

    Attributes:
        text: The period as written in ``missing``.
        first: First day it covers; None when the period cannot exist.
        last: Last day it covers; None when the period cannot exist.
    """

    text: str
    first: date | None
    last: date | None

    @property
    def nonsensical(self) -> bool:
        """True for a period no calendar has (Q5, month 13, the 31st of February)."""
        return self.first is None


@dataclass(frozen=True)
class UnanswerableQuestion:
    """One question that has no SQL answer on its database.

    Attributes:
        id: Unique id.
        database: Spider db_id, or ``autofin``.
        question: The question as an analyst would ask it.
        category: One of `CATEGORIES`.
        missing: The concept or period that makes it unanswerable ("employees", "1850").
        why: One sentence saying why it cannot be answered.
    """

    id: str
    database: str
    question: str
    category: str
    missing: str
    why: str

    @property
    def period(self) -> Period | None:
        """The parsed period of an ``impossible_period`` question, else None."""
        return parse_period(self.missing) if self.category == "impossible_period" else None


def parse_period(text: str) -> Period:
    """Parses the ``missing`` field of an ``impossible_period`` question.

    Forms: ``YYYY``; ``YYYY-YYYY`` (both years included); ``YYYY-MM``; ``YYYY-MM-DD``;
    ``YYYY-Qn`` (calendar quarter); ``FYyyyy`` (AutoFin's fiscal year, April of the year before
    to March of ``yyyy``); and the nonsensical ``Qn`` with n > 4, ``YYYY-Qn`` with n > 4,
    ``YYYY-MM`` with a month above 12, ``YYYY-MM-DD`` naming a day the month lacks that year
    and ``--MM-DD`` (no year) naming a day the month never has.

    Raises:
        ValueError: If ``text`` is in none of these forms, or is an ordinary quarter without
            a year (``Q2`` names no period on its own).
    """
    text = text.strip()
    if match := re.fullmatch(r"(\d{4})", text):
        year = int(match[1])
        return Period(text, date(year, 1, 1), date(year, 12, 31))
    if match := re.fullmatch(r"(\d{4})-(\d{4})", text):
        first, last = int(match[1]), int(match[2])
        if first > last:
            raise ValueError(f"period {text!r}: years out of order")
        return Period(text, date(first, 1, 1), date(last, 12, 31))
    if match := re.fullmatch(r"FY(\d{4})", text):
        year = int(match[1])
        return Period(text, date(year - 1, 4, 1), date(year, 3, 31))
    if match := re.fullmatch(r"(?:(\d{4})-)?Q(\d+)", text):
        quarter = int(match[2])
        if quarter < 1:
            raise ValueError(f"period {text!r}: quarter below 1")
        if quarter > 4:
            return Period(text, None, None)
        if match[1] is None:
            raise ValueError(f"period {text!r}: an ordinary quarter needs a year (YYYY-Qn)")
        year = int(match[1])
        return Period(text, date(year, 3 * quarter - 2, 1), _month_end(year, 3 * quarter))
    if match := re.fullmatch(r"(\d{4})-(\d{2})", text):
        year, month = int(match[1]), int(match[2])
        if month == 0:
            raise ValueError(f"period {text!r}: month 00")
        if month > 12:
            return Period(text, None, None)
        return Period(text, date(year, month, 1), _month_end(year, month))
    if match := re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", text):
        year, month, day = (int(part) for part in match.groups())
        if not 1 <= month <= 12 or not 1 <= day <= 31:
            raise ValueError(f"period {text!r}: not a month and day")
        try:
            day_date = date(year, month, day)
        except ValueError:
            return Period(text, None, None)  # 31 February and the like
        return Period(text, day_date, day_date)
    if match := re.fullmatch(r"--(\d{2})-(\d{2})", text):
        month, day = int(match[1]), int(match[2])
        if not 1 <= month <= 12 or not 1 <= day <= 31:
            raise ValueError(f"period {text!r}: not a month and day")
        try:
            date(2000, month, day)  # a leap year: a day valid in some year is no impossibility
        except ValueError:
            return Period(text, None, None)
        raise ValueError(f"period {text!r}: a day of the year without a year is not impossible")
    raise ValueError(f"period {text!r} is in none of the known forms")


def _month_end(year: int, month: int) -> date:
    following = date(year + month // 12, month % 12 + 1, 1)
    return date.fromordinal(following.toordinal() - 1)


def load_unanswerable(
    path: Path | str | None = None, databases: Iterable[str] | None = None
) -> list[UnanswerableQuestion]:
    """Reads the unanswerable-question file. Blank lines are ignored.

    Args:
        path: The JSONL file; defaults to the one shipped next to this module.
        databases: Keep only questions on these databases (Spider db_ids or ``autofin``); all
            when None.

    Returns:
        The questions, in file order.

    Raises:
        DatasetFormatError: For a malformed line, naming the file, the line number and the
            offending field; also for a repeated id.
    """
    path = Path(path) if path is not None else DEFAULT_PATH
    wanted = set(databases) if databases is not None else None
    questions: list[UnanswerableQuestion] = []
    lines_by_id: dict[str, int] = {}
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            question = _parse_line(path, number, line)
            if question.id in lines_by_id:
                message = f"duplicate id {question.id!r} (first on line {lines_by_id[question.id]})"
                raise DatasetFormatError(path, message, line=number, field="id")
            lines_by_id[question.id] = number
            if wanted is None or question.database in wanted:
                questions.append(question)
    return questions


def _parse_line(path: Path, number: int, line: str) -> UnanswerableQuestion:
    try:
        entry: Any = json.loads(line)
    except json.JSONDecodeError as error:
        raise DatasetFormatError(path, f"not JSON: {error}", line=number) from error
    if not isinstance(entry, dict):
        raise DatasetFormatError(path, f"expected an object, got {entry!r}", line=number)
    unknown = sorted(set(entry) - set(FIELDS))
    if unknown:
        raise DatasetFormatError(path, f"unknown fields {unknown}", line=number, field=unknown[0])
    for field in FIELDS:
        value = entry.get(field)
        if not isinstance(value, str) or not value.strip():
            message = f"{field!r} must be a non-empty string, got {value!r}"
            raise DatasetFormatError(path, message, line=number, field=field)
        if value != value.strip():
            message = f"{field!r} has surrounding whitespace: {value!r}"
            raise DatasetFormatError(path, message, line=number, field=field)
    checks = (
        ("id", bool(_ID.match(entry["id"])), "lowercase letters, digits, '_', '.', '-'"),
        ("database", bool(_DATABASE.match(entry["database"])), "a db_id or 'autofin'"),
        ("category", entry["category"] in CATEGORIES, f"one of {list(CATEGORIES)}"),
    )
    for field, ok, expected in checks:
        if not ok:
            message = f"{field!r} is {entry[field]!r}, expected {expected}"
            raise DatasetFormatError(path, message, line=number, field=field)
    if entry["category"] == "impossible_period":
        try:
            parse_period(entry["missing"])
        except ValueError as error:
            raise DatasetFormatError(path, str(error), line=number, field="missing") from error
    return UnanswerableQuestion(**{field: entry[field] for field in FIELDS})
