"""Reading the project's Markdown for the docs check: fenced code blocks, links, headings.

A fenced block's info string is its language followed by attributes: ```` ```bash runnable
server ```` is a ``bash`` block with the attributes ``runnable`` and ``server``. The line
before a block may say why it is not run: ``<!-- not run: REASON -->``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

FENCE = re.compile(r"^(`{3,})(.*)$")
NOT_RUN = re.compile(r"^<!--\s*not run:\s*(\S.*?)\s*-->$")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a Markdown file."""

    path: Path
    line: int  # 1-based line of the opening fence
    language: str
    attributes: frozenset[str]
    code: str
    not_run_reason: str | None  # from a ``<!-- not run: ... -->`` line just before

    @property
    def runnable(self) -> bool:
        return "runnable" in self.attributes

    @property
    def needs_server(self) -> bool:
        return "server" in self.attributes

    @property
    def in_repo(self) -> bool:
        return "in-repo" in self.attributes

    def where(self, root: Path) -> str:
        return f"{self.path.relative_to(root)}:{self.line}"


def blocks_of(path: Path) -> list[Block]:
    """The fenced code blocks of ``path``, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        fence, info = opening.group(1), opening.group(2).split()
        end = index + 1
        while end < len(lines) and not lines[end].startswith(fence):
            end += 1
        if end == len(lines):
            raise ValueError(f"{path}:{index + 1}: the code block is never closed")
        before = _previous_text_line(lines, index)
        reason = NOT_RUN.match(before)
        blocks.append(
            Block(
                path=path,
                line=index + 1,
                language=info[0] if info else "",
                attributes=frozenset(info[1:]),
                code="\n".join(lines[index + 1 : end]),
                not_run_reason=reason.group(1) if reason else None,
            )
        )
        index = end + 1
    return blocks


def _previous_text_line(lines: list[str], index: int) -> str:
    for line in reversed(lines[:index]):
        if line.strip():
            return line.strip()
    return ""


def prose_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, text) of every line outside fenced blocks, inline code removed."""
    return [(number, INLINE_CODE.sub("", line)) for number, line in prose_lines_with_code(path)]


def links_of(path: Path) -> list[tuple[int, str]]:
    """(line number, target) of every Markdown link outside code."""
    return [
        (number, match.group(2))
        for number, text in prose_lines(path)
        for match in LINK.finditer(text)
    ]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = INLINE_CODE.sub(lambda m: m.group(0).strip("`"), heading).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors_of(path: Path) -> set[str]:
    """The anchors of ``path``'s headings (a repeated heading gets ``-1``, ``-2``, ...)."""
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    for _, text in prose_lines_with_code(path):
        heading = HEADING.match(text)
        if not heading:
            continue
        base = slug(heading.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        anchors.add(base if count == 0 else f"{base}-{count}")
    return anchors


def prose_lines_with_code(path: Path) -> list[tuple[int, str]]:
    """(line number, text) of every line outside fenced blocks, inline code kept."""
    found: list[tuple[int, str]] = []
    fence: str | None = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        opening = FENCE.match(line)
        if fence is None and opening:
            fence = opening.group(1)
        elif fence is not None and line.startswith(fence):
            fence = None
        elif fence is None:
            found.append((number, line))
    return found


def table_rows(path: Path, section: str) -> list[list[str]]:
    """The cells of the table rows under the heading ``section`` (up to the next heading of
    the same or a higher level), header and separator rows left out."""
    rows: list[list[str]] = []
    inside, level = False, 0
    for _, line in prose_lines_with_code(path):
        heading = HEADING.match(line)
        if heading:
            if inside and len(heading.group(1)) <= level:
                break
            if heading.group(2) == section:
                inside, level = True, len(heading.group(1))
            continue
        if inside and line.startswith("|"):
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if not set("".join(cells)) <= set("-: "):
                rows.append(cells)
    return rows[1:] if rows else rows  # without the header row
