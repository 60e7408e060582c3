"""Reading a document file: Markdown, plain text, HTML or PDF, by its extension.

::

    document = read_document(Path("finance_handbook.md"))
    document.sections[0].locator  # "Glossary > Metrics"

Refused with :class:`DocumentError` naming the file, before anything is written anywhere: an
unsupported extension, a file that cannot be read, an empty one (or one holding only
whitespace), one over ``max_bytes`` (checked on its size before reading a byte of it),
binary junk (NUL bytes or invalid UTF-8 in a text kind; no ``%PDF-`` header for a PDF), an
encrypted or unreadable PDF, and a document in which no section holds any text.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from kb.documents.html import split_html
from kb.documents.markdown import split_markdown
from kb.documents.model import Document, DocumentError, DocumentKind, Section
from kb.documents.pdf import split_pdf
from kb.file_bytes import read_capped

MAX_DOCUMENT_BYTES = 20 * 1024 * 1024
KINDS: dict[str, DocumentKind] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".text": "text",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
}


def read_document(path: Path, *, max_bytes: int = MAX_DOCUMENT_BYTES) -> Document:
    """Read and split the document at ``path`` (see the module docstring)."""
    kind = KINDS.get(path.suffix.lower())
    if kind is None:
        known = ", ".join(sorted(KINDS))
        raise DocumentError(f"{path}: unsupported document type {path.suffix!r} (expected {known})")
    data = read_capped(path, max_bytes, "document size limit", DocumentError)
    if not data.strip():
        raise DocumentError(f"{path}: the file is empty")
    sections = split_pdf(data, str(path)) if kind == "pdf" else _text_sections(path, kind, data)
    if not sections:
        raise DocumentError(f"{path}: no text in it")
    return Document(str(path), kind, hashlib.sha256(data).hexdigest(), tuple(sections))


def _text_sections(path: Path, kind: DocumentKind, data: bytes) -> list[Section]:
    if b"\x00" in data[:65536]:
        raise DocumentError(f"{path}: binary content, not a {kind} document")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DocumentError(
            f"{path}: not UTF-8 text (byte {exc.start}); binary content or another encoding"
        ) from None
    if kind == "html":
        return split_html(text)
    return split_markdown(text, headings=kind == "markdown")
