"""A section cut into parts the model can read at once, and the schema text it reads beside.

A section longer than ``max_chars`` is cut between its blocks; a table or a list longer than
that is cut between rows (a table's header repeated in each part), a text block between lines.
"""

from __future__ import annotations

import re

from agents.learn.mine.schema_view import SchemaView
from kb.documents import Block, Section
from ukf import BaseUKF

MAX_SCHEMA_CHARS = 3000
ENUM_VALUES_SHOWN = 8


def section_parts(section: Section, max_chars: int) -> list[str]:
    """The section's text in parts of at most about ``max_chars`` characters each."""
    title = f"# {' > '.join(section.heading)}\n\n" if section.heading else ""
    pieces = [piece for block in section.blocks for piece in _pieces(block, max_chars)]
    parts: list[str] = []
    current: list[str] = []
    for piece in pieces:
        if current and sum(len(p) + 2 for p in current) + len(piece) > max_chars:
            parts.append(title + "\n\n".join(current))
            current = []
        current.append(piece)
    if current:
        parts.append(title + "\n\n".join(current))
    return parts


def _pieces(block: Block, max_chars: int) -> list[str]:
    text = block.render()
    if len(text) <= max_chars:
        return [text]
    if block.kind in ("table", "list") and len(block.rows) > 1:
        head = block.rows[:1] if block.kind == "table" else ()
        body = block.rows[len(head) :]
        pieces: list[str] = []
        chunk: list[tuple[str, ...]] = []
        for row in body:
            candidate = Block(block.kind, rows=(*head, *chunk, row)).render()
            if chunk and len(candidate) > max_chars:
                pieces.append(Block(block.kind, rows=(*head, *chunk)).render())
                chunk = []
            chunk.append(row)
        pieces.append(Block(block.kind, rows=(*head, *chunk)).render())
        return pieces
    return [text[i : i + max_chars] for i in range(0, len(text), max_chars)]


def schema_text(view: SchemaView, text: str = "", max_chars: int = MAX_SCHEMA_CHARS) -> str:
    """``tables: column, column (values: 'a', 'b'), ...``, tables with the same columns on one
    line. When all of it is longer than ``max_chars``, what ``text`` (the section) mentions
    comes first: the tables and columns it names, and only the values it names; the rest is cut.
    """
    groups = _groups(view)
    full = "\n".join(_line(tables, cols, view, None) for tables, cols in groups)
    if len(full) <= max_chars:
        return full
    folded = f" {_fold(text)} "
    ranked = sorted(groups, key=lambda group: -_score(group, view, folded))
    lines, size = [], 0
    for tables, cols in ranked:
        line = _line(tables, cols, view, folded)
        if size + len(line) > max_chars:
            break
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines) + "\n..."


Group = tuple[list[str], list[BaseUKF]]


def _groups(view: SchemaView) -> list[Group]:
    """Tables with the same column names together (``income_nova, income_aurora: ...``)."""
    columns: dict[str, list[BaseUKF]] = {}
    for entry in view.columns.values():
        columns.setdefault(str(entry.content_resources["table"]), []).append(entry)
    grouped: dict[tuple[str, ...], Group] = {}
    for table, cols in sorted(columns.items()):
        key = tuple(sorted(str(c.content_resources["column"]).casefold() for c in cols))
        grouped.setdefault(key, ([], cols))[0].append(table)
    return list(grouped.values())


def _values(view: SchemaView, column: BaseUKF) -> list[str]:
    r = column.content_resources
    enums = view.enums.get((str(r["table"]).casefold(), str(r["column"]).casefold()), {})
    return [str(e.content_resources.get("value")) for e in enums.values()]


def _mentioned(name: str, folded: str) -> bool:
    return f" {_fold(name)} " in folded


def _score(group: Group, view: SchemaView, folded: str) -> int:
    tables, cols = group
    score = sum(3 for t in tables if _mentioned(t, folded))
    for column in cols:
        score += 2 * _mentioned(str(column.content_resources["column"]), folded)
        score += sum(_mentioned(v, folded) for v in _values(view, column))
    return score


def _line(tables: list[str], cols: list[BaseUKF], view: SchemaView, folded: str | None) -> str:
    labels = []
    for column in cols:
        name, values = str(column.content_resources["column"]), _values(view, column)
        if folded is not None:  # only the values the section names
            values = [v for v in values if _mentioned(v, folded)]
        shown = ", ".join(repr(v) for v in values[:ENUM_VALUES_SHOWN])
        more = ", ..." if len(values) > ENUM_VALUES_SHOWN else ""
        mentioned = folded is not None and (_mentioned(name, folded) or values)
        labels.append((not mentioned, f"{name} (values: {shown}{more})" if values else name))
    if folded is not None:
        labels.sort(key=lambda label: label[0])
    return f"{', '.join(tables)}: {', '.join(label for _, label in labels)}"


def _fold(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.casefold()))
