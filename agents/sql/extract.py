"""Pull the SQL (and the reasoning around it) out of a model's reply.

Models answer in many shapes: a fenced ```sql block with prose around it, a bare statement,
several blocks (the last is usually the final one), a statement followed by an explanation,
or nothing usable at all. ``extract_sql`` takes the last fenced block that looks like a query,
else the first ``SELECT``/``WITH`` statement in the text, and keeps one statement. The
comment header (``-- ...`` lines before the query) and any prose become the reasoning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)
_START = re.compile(r"(?im)^\s*(?:--[^\n]*\n\s*)*(WITH|SELECT)\b")
_QUERY_WORD = re.compile(r"(?i)\b(SELECT|WITH)\b")
_BLOCK = r"/\*(?:(?!\*/).)*\*/"
_LEADING_COMMENT = re.compile(rf"\A[ \t]*(?:--[^\n]*|{_BLOCK}[ \t]*)(?:\n|\Z)", re.DOTALL)
_TRAILING_COMMENT = re.compile(rf"(?:\A|\n)[ \t]*(?:--[^\n]*|{_BLOCK})\s*\Z", re.DOTALL)


class NoSQLError(ValueError):
    """The reply holds no query; ``reply`` keeps the text for the log."""

    def __init__(self, reply: str) -> None:
        shown = reply.strip().replace("\n", " ")
        super().__init__(f"no SQL query in the model reply: {shown[:200]!r}")
        self.reply = reply


@dataclass(frozen=True)
class ExtractedSQL:
    sql: str
    reasoning: str


def extract_sql(reply: str) -> ExtractedSQL:
    """The query in ``reply`` and the reasoning around it.

    Raises:
        NoSQLError: when nothing in the reply looks like a SELECT or WITH query.
    """
    blocks = [
        (lang.lower(), body) for lang, body in _FENCE.findall(reply) if _QUERY_WORD.search(body)
    ]
    if blocks:
        lang_sql = [body for lang, body in blocks if lang in ("sql", "sqlite", "postgresql")]
        body = (lang_sql or [b for _, b in blocks])[-1]
        prose = _FENCE.sub(" ", reply)
    else:
        start = _START.search(reply)
        if start is None:
            raise NoSQLError(reply)
        body = reply[start.start() :]
        prose = reply[: start.start()]
    header, query = _split_header(body)
    query = _first_statement(query)
    if not _QUERY_WORD.match(query):
        raise NoSQLError(reply)
    reasoning = "\n".join(part for part in (_clean_prose(prose), header) if part)
    sql = "\n".join(line for line in (_header_lines(body), query) if line)
    return ExtractedSQL(sql=sql, reasoning=reasoning)


def statement_only(sql: str) -> str:
    """``sql`` without the whole-line comments before and after the statement.

    Leading and trailing lines that hold only a ``-- ...`` comment or a ``/* ... */`` block
    (the model's reasoning header, a closing remark) are dropped; a comment inside the
    statement, or after SQL on the same line, is part of the statement and stays.
    """
    text = sql.strip()
    while (lead := _LEADING_COMMENT.match(text)) is not None:
        text = text[lead.end() :].strip()
    while (trail := _TRAILING_COMMENT.search(text)) is not None:
        before = text[: trail.start()]
        if before.count("'") % 2:  # the "comment" is inside an open string literal
            break
        text = before.strip()
    return text


def strip_comments(sql: str) -> str:
    """The SQL without ``--`` comment lines (for display and comparison)."""
    return "\n".join(line for line in sql.splitlines() if not line.strip().startswith("--")).strip()


def _split_header(body: str) -> tuple[str, str]:
    lines = body.strip().splitlines()
    header: list[str] = []
    while lines and (not lines[0].strip() or lines[0].strip().startswith("--")):
        text = lines.pop(0).strip().removeprefix("--").strip()
        if text:
            header.append(text)
    return "\n".join(header), "\n".join(lines).strip()


def _header_lines(body: str) -> str:
    lines = []
    for line in body.strip().splitlines():
        if not line.strip().startswith("--"):
            break
        lines.append(line.strip())
    return "\n".join(lines)


def _first_statement(query: str) -> str:
    """Cut at the first top-level ``;`` (outside quotes) and at trailing prose."""
    quote: str | None = None
    for i, ch in enumerate(query):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"`":
            quote = ch
        elif ch == ";":
            return query[:i].strip()
    # no semicolon: stop at a blank line followed by prose
    parts = re.split(r"\n\s*\n", query, maxsplit=1)
    if len(parts) == 2 and not re.match(
        r"(?i)\s*(SELECT|FROM|WHERE|GROUP|ORDER|UNION|--)", parts[1]
    ):
        return parts[0].strip()
    return query.strip()


def _clean_prose(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()
