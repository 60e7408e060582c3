"""Reading documents: Markdown, text, HTML and PDF split by structure, with locators."""

from __future__ import annotations

from pathlib import Path

from kb.documents import read_document

MARKDOWN = """# Concert handbook

Singers perform at concerts held in stadiums.

## Glossary

| term | meaning |
|---|---|
| headliner | the singer who closes the concert |
| capacity | how many people a stadium seats |

## Rules

- Ages are in years.
- Countries are stored in English,
  with capitals.

### Details
Plain text under a third-level heading.

Setext title
------------
Under it.
"""

HTML = """<html><head><title>x</title><style>p {color: red}</style></head><body>
<h1>Stadiums</h1><p>Each stadium has a capacity.</p>
<h2>Codes</h2><table><tr><th>code</th><th>meaning</th></tr><tr><td>S1</td><td>Raith</td></tr>
</table><ul><li>one</li><li>two <b>bold</b></li></ul>
<script>var junk = 1;</script></body></html>"""


def test_markdown_splits_headings_tables_and_lists(tmp_path: Path):
    path = tmp_path / "handbook.md"
    path.write_text(MARKDOWN, encoding="utf-8")
    document = read_document(path)
    assert document.kind == "markdown" and len(document.sha256) == 64
    by_locator = {s.locator: s for s in document.sections}
    assert list(by_locator) == [
        "Concert handbook",
        "Concert handbook > Glossary",
        "Concert handbook > Rules",
        "Concert handbook > Rules > Details",
        "Concert handbook > Setext title",
    ]
    table = by_locator["Concert handbook > Glossary"].blocks[0]
    assert table.kind == "table" and table.rows[0] == ("term", "meaning")
    assert table.rows[2] == ("capacity", "how many people a stadium seats")
    rules = by_locator["Concert handbook > Rules"].blocks[0]
    assert rules.kind == "list"
    assert rules.rows[1] == ("Countries are stored in English, with capitals.",)
    assert "| headliner |" in by_locator["Concert handbook > Glossary"].text


def test_plain_text_has_one_section_of_blocks(tmp_path: Path):
    path = tmp_path / "notes.txt"
    path.write_text("# not a heading here\n\nFirst paragraph.\n\n- a\n- b\n", encoding="utf-8")
    (section,) = read_document(path).sections
    assert section.locator == "(start)"
    assert section.kinds() == ["text", "text", "list"]


def test_html_splits_headings_tables_lists_and_drops_scripts(tmp_path: Path):
    path = tmp_path / "page.html"
    path.write_text(HTML, encoding="utf-8")
    sections = read_document(path).sections
    assert [s.locator for s in sections] == ["Stadiums", "Stadiums > Codes"]
    codes = sections[1]
    assert codes.kinds() == ["table", "list"]
    assert codes.blocks[0].rows == (("code", "meaning"), ("S1", "Raith"))
    assert codes.blocks[1].rows == (("one",), ("two bold",))
    assert "junk" not in "".join(s.text for s in sections)
    assert "color" not in "".join(s.text for s in sections)


def make_pdf(path: Path, pages: list[list[str]]) -> Path:
    """A small text PDF written with fpdf2, one list of lines per page."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for lines in pages:
        pdf.add_page()
        for line in lines:
            pdf.cell(0, 8, line, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))
    return path


def test_pdf_splits_by_page_and_detected_headings(tmp_path: Path):
    path = make_pdf(
        tmp_path / "guide.pdf",
        [
            ["1 Singers", "A singer has an age in years.", "- Age is a whole number."],
            ["GLOSSARY", "Headliner means the main singer."],
        ],
    )
    document = read_document(path)
    assert document.kind == "pdf"
    assert [s.locator for s in document.sections] == ["page 1 > 1 Singers", "page 2 > GLOSSARY"]
    assert document.sections[0].kinds() == ["text", "list"]
    assert "Headliner means the main singer." in document.sections[1].text
