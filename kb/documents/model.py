"""What a read document is: a :class:`Document` of :class:`Section` s of :class:`Block` s.

A section is the text under one heading (its *heading path*: the headings above it, outermost
first) or, for a PDF, under one heading of one page. Its blocks keep the structure the
extraction needs: running ``text``, a ``table`` (its rows of cells, the header first) and a
``list`` (its items). Every section knows its *locator*, the place a reader finds it again
(``Glossary > Metrics``, ``page 3 > Revenue``), which extracted knowledge records as provenance.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

BlockKind = Literal["text", "table", "list"]
DocumentKind = Literal["markdown", "text", "html", "pdf"]


class DocumentError(ValueError):
    """A document that cannot be read; the message names the file and why."""


@dataclass(frozen=True)
class Block:
    """One structural piece of a section: running text, a table or a list."""

    kind: BlockKind
    text: str = ""
    rows: tuple[tuple[str, ...], ...] = ()
    """A table's rows (the header first) or a list's items (one cell each)."""

    def render(self) -> str:
        """The block as Markdown (tables as pipe tables, lists as ``-`` items)."""
        if self.kind == "table" and self.rows:
            width = max(len(row) for row in self.rows)
            lines = ["| " + " | ".join(_pad(self.rows[0], width)) + " |", "|" + "---|" * width]
            lines += ["| " + " | ".join(_pad(row, width)) + " |" for row in self.rows[1:]]
            return "\n".join(lines)
        if self.kind == "list" and self.rows:
            return "\n".join(f"- {row[0]}" for row in self.rows)
        return self.text


def _pad(row: tuple[str, ...], width: int) -> list[str]:
    return [cell.replace("|", "/") for cell in row] + [""] * (width - len(row))


@dataclass(frozen=True)
class Section:
    """The blocks under one heading path (of one page, for a PDF)."""

    heading: tuple[str, ...]
    blocks: tuple[Block, ...]
    page: int | None = None

    @property
    def locator(self) -> str:
        """Where the section is: ``Glossary > Metrics``, ``page 2 > Revenue``, ``(start)``."""
        parts = ([f"page {self.page}"] if self.page is not None else []) + list(self.heading)
        return " > ".join(parts) if parts else "(start)"

    @property
    def text(self) -> str:
        """The section as Markdown: its heading path as a title, then its blocks."""
        title = [f"# {' > '.join(self.heading)}"] if self.heading else []
        return "\n\n".join([*title, *(b.render() for b in self.blocks)])

    def kinds(self) -> list[str]:
        return [b.kind for b in self.blocks]


@dataclass(frozen=True)
class Document:
    """A read document: its path, kind, content hash (SHA-256 of the bytes) and sections."""

    path: str
    kind: DocumentKind
    sha256: str
    sections: tuple[Section, ...] = field(default_factory=tuple)

    @property
    def name(self) -> str:
        return self.path.replace("\\", "/").rsplit("/", 1)[-1]
