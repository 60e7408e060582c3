"""PDF → sections, one or more per page, with :mod:`pypdf` (text only; no OCR).

Each page's text is split into blocks as plain text is (:func:`kb.documents.markdown.
split_blocks`: lists by their bullets or numbers); a line that looks like a heading (short,
no closing punctuation, numbered like ``2.1 Revenue`` or in capitals) opens a new section of
the page, with that heading as its path. Refused, with :class:`DocumentError` naming the file:
a file that is not a PDF, one pypdf cannot read, one encrypted with a password (one that opens
with the empty password is read), and one with no extractable text (a scan).
"""

from __future__ import annotations

import io
import logging
import re

from kb.documents.markdown import split_blocks
from kb.documents.model import DocumentError, Section

_NUMBERED = re.compile(r"^\d{1,2}(?:\.\d{1,2})*\.?\s+[A-Z]\S*")
MAX_HEADING_CHARS = 60


def split_pdf(data: bytes, path: str) -> list[Section]:
    """The sections of the PDF ``data`` read from ``path`` (named in errors)."""
    from pypdf import PdfReader

    if b"%PDF-" not in data[:1024]:
        raise DocumentError(f"{path}: not a PDF (no %PDF- header)")
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise DocumentError(f"{path}: the PDF is encrypted with a password; cannot read it")
        pages = [page.extract_text() or "" for page in reader.pages]
    except DocumentError:
        raise
    except Exception as exc:  # pypdf raises many kinds on malformed files (IndexError, ...)
        raise DocumentError(f"{path}: unreadable PDF: {type(exc).__name__}: {exc}") from None
    sections: list[Section] = []
    for number, text in enumerate(pages, 1):
        sections += _page_sections(text, number)
    if not sections:
        raise DocumentError(f"{path}: the PDF holds no extractable text (a scan?)")
    return sections


def _page_sections(text: str, page: int) -> list[Section]:
    sections: list[Section] = []
    heading: tuple[str, ...] = ()
    body: list[str] = []

    def close() -> None:
        blocks = split_blocks(body)
        if blocks:
            sections.append(Section(heading, tuple(blocks), page=page))
        body.clear()

    for line in text.splitlines():
        if _is_heading(line):
            close()
            heading = (" ".join(line.split()),)
        else:
            body.append(line)
    close()
    return sections


def _is_heading(line: str) -> bool:
    text = line.strip()
    if not text or len(text) > MAX_HEADING_CHARS or text[-1] in ".,;:!?":
        return False
    letters = [c for c in text if c.isalpha()]
    capitals = len(letters) >= 3 and all(c.isupper() for c in letters)
    return bool(_NUMBERED.match(text)) or capitals
