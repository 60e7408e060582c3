"""Documents that cannot be read: each refused with a DocumentError naming the file, fast."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kb.documents import DocumentError, read_document
from tests.kb.test_documents import make_pdf


def _refused(path: Path, words: str) -> None:
    with pytest.raises(DocumentError) as raised:
        read_document(path)
    assert str(path) in str(raised.value)
    assert words in str(raised.value)


def test_an_encrypted_pdf(tmp_path: Path):
    from pypdf import PdfReader, PdfWriter

    plain = make_pdf(tmp_path / "plain.pdf", [["Some text."]])
    writer = PdfWriter()
    for page in PdfReader(plain).pages:
        writer.add_page(page)
    writer.encrypt(user_password="secret", owner_password="owner")
    locked = tmp_path / "locked.pdf"
    with locked.open("wb") as out:
        writer.write(out)
    _refused(locked, "encrypted")


def test_an_unreadable_pdf(tmp_path: Path):
    path = tmp_path / "broken.pdf"
    path.write_bytes(b"%PDF-1.4\n" + b"garbage that is no PDF object at all\n" * 20)
    _refused(path, "PDF")


def test_an_empty_file(tmp_path: Path):
    path = tmp_path / "empty.md"
    path.write_bytes(b"")
    _refused(path, "empty")
    blank = tmp_path / "blank.txt"
    blank.write_text("  \n\n \t\n", encoding="utf-8")
    _refused(blank, "empty")


def test_a_50_mb_file_is_refused_without_reading_it(tmp_path: Path):
    path = tmp_path / "huge.md"
    with path.open("wb") as out:  # sparse: no 50 MB actually written
        out.truncate(50 * 1024 * 1024)
    started = time.perf_counter()
    _refused(path, "over the document size limit")
    assert time.perf_counter() - started < 0.5


def test_binary_junk(tmp_path: Path):
    junk = bytes(range(256)) * 64
    for name in ("junk.md", "junk.txt", "junk.html"):
        path = tmp_path / name
        path.write_bytes(junk)
        _refused(path, "binary")
    pdf = tmp_path / "junk.pdf"
    pdf.write_bytes(junk)
    _refused(pdf, "not a PDF")
    latin = tmp_path / "latin.md"
    latin.write_bytes("Caf\xe9 au lait".encode("latin-1"))
    _refused(latin, "not UTF-8")


def test_an_unsupported_extension_and_a_missing_file(tmp_path: Path):
    path = tmp_path / "slides.pptx"
    path.write_bytes(b"PK\x03\x04")
    _refused(path, "unsupported document type")
    _refused(tmp_path / "missing.md", "cannot read")
