"""Markdown and plain text → sections.

Markdown: ATX headings (``#`` to ``######``) and setext headings (a line underlined with ``===``
or ``---``) open sections, each with its heading path; pipe tables (a header row, a ``---``
separator row, then rows) become table blocks; consecutive list items (``-``, ``*``, ``+``,
``•``, ``1.``, ``1)``, with their indented continuation lines) become list blocks; everything
else, split at blank lines, is text (fenced code stays text, uninterpreted). Plain text has no
headings: the same blocks, in one section.
"""

from __future__ import annotations

import re

from kb.documents.model import Block, Section

_ATX = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_ITEM = re.compile(r"^\s{0,3}(?:[-*+•]|\d{1,3}[.)])\s+(.*)$")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")


def split_markdown(text: str, *, headings: bool = True) -> list[Section]:
    """The sections of ``text`` (empty sections left out)."""
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    lines = text.splitlines()
    body: list[str] = []

    def close() -> None:
        blocks = split_blocks(body)
        if blocks:
            sections.append(Section(tuple(title for _, title in path), tuple(blocks)))
        body.clear()

    i, fenced = 0, False
    while i < len(lines):
        line = lines[i]
        if _FENCE.match(line):
            fenced = not fenced
        level_title = None if fenced or not headings else _heading(lines, i)
        if level_title is None:
            body.append(line)
            i += 1
            continue
        level, title, used = level_title
        close()
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, title))
        i += used
    close()
    return sections


def _heading(lines: list[str], i: int) -> tuple[int, str, int] | None:
    """``(level, title, lines used)`` when a heading starts at line ``i``."""
    found = _ATX.match(lines[i])
    if found and found.group(2):
        return len(found.group(1)), _clean(found.group(2)), 1
    if i + 1 < len(lines) and lines[i].strip() and not _ITEM.match(lines[i]):
        underline = _SETEXT.match(lines[i + 1])
        if underline and "|" not in lines[i]:
            return (1 if underline.group(1)[0] == "=" else 2), _clean(lines[i]), 2
    return None


def split_blocks(lines: list[str]) -> list[Block]:
    """Text, table and list blocks of ``lines`` (one section's body)."""
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
        elif _is_table_start(lines, i):
            rows = [_cells(line)]
            i += 2
            while i < len(lines) and "|" in lines[i] and lines[i].strip():
                rows.append(_cells(lines[i]))
                i += 1
            blocks.append(Block("table", rows=tuple(rows)))
        elif _ITEM.match(line):
            items: list[str] = []
            while i < len(lines) and lines[i].strip():
                item = _ITEM.match(lines[i])
                if item:
                    items.append(item.group(1).strip())
                elif lines[i].startswith((" ", "\t")) and items:
                    items[-1] += " " + lines[i].strip()
                else:
                    break
                i += 1
            blocks.append(Block("list", rows=tuple((_clean(item),) for item in items)))
        else:
            para: list[str] = []
            while i < len(lines) and lines[i].strip() and not _starts_block(lines, i):
                para.append(lines[i].strip())
                i += 1
            if para:
                blocks.append(Block("text", text="\n".join(para)))
            else:  # a line that starts a block only after a blank line
                blocks.append(Block("text", text=lines[i].strip()))
                i += 1
    return blocks


def _starts_block(lines: list[str], i: int) -> bool:
    return _is_table_start(lines, i) or bool(_ITEM.match(lines[i]))


def _is_table_start(lines: list[str], i: int) -> bool:
    return (
        "|" in lines[i]
        and i + 1 < len(lines)
        and "|" in lines[i + 1] + lines[i]
        and bool(_TABLE_SEPARATOR.match(lines[i + 1]))
    )


def _cells(line: str) -> tuple[str, ...]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") else inner
    return tuple(_clean(cell) for cell in inner.split("|"))


def _clean(text: str) -> str:
    return " ".join(text.replace("**", "").split())
