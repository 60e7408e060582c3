"""HTML → sections, with the standard library's :class:`html.parser.HTMLParser`.

``h1``-``h6`` open sections (the heading path as in Markdown); ``table`` elements become table
blocks (each ``tr`` a row of its ``th``/``td`` cells), ``ul``/``ol`` list blocks (each ``li`` an
item; nested lists flattened into their items); other text, split at block elements (``p``,
``div``, ``br``...), is text. ``script``, ``style``, ``head`` and ``template`` are left out.
"""

from __future__ import annotations

from html.parser import HTMLParser

from kb.documents.model import Block, Section

_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_SKIPPED = {"script", "style", "head", "template", "noscript"}
_BREAKS = {"p", "div", "br", "section", "article", "blockquote", "pre", "dd", "dt", "hr"}


class _Splitter(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: list[Section] = []
        self.path: list[tuple[int, str]] = []
        self.blocks: list[Block] = []
        self.text: list[str] = []
        self.skip = 0
        self.heading: tuple[int, list[str]] | None = None
        self.rows: list[tuple[str, ...]] | None = None
        self.row: list[str] | None = None
        self.cell: list[str] | None = None
        self.items: list[str] | None = None
        self.item: list[str] | None = None
        self.list_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED:
            self.skip += 1
        elif tag in _HEADINGS:
            self._flush_text()
            self.heading = (_HEADINGS[tag], [])
        elif tag == "table":
            self._flush_text()
            self.rows = []
        elif tag == "tr" and self.rows is not None:
            self.row = []
        elif tag in ("td", "th") and self.row is not None:
            self.cell = []
        elif tag in ("ul", "ol"):
            if self.list_depth == 0:
                self._flush_text()
                self.items = []
            self.list_depth += 1
        elif tag == "li" and self.items is not None:
            self._end_item()
            self.item = []
        elif tag in _BREAKS:
            self._flush_text()

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED:
            self.skip = max(0, self.skip - 1)
        elif tag in _HEADINGS and self.heading is not None:
            level, words = self.heading
            self.heading = None
            self._close_section()
            while self.path and self.path[-1][0] >= level:
                self.path.pop()
            title = " ".join(" ".join(words).split())
            if title:
                self.path.append((level, title))
        elif tag in ("td", "th") and self.cell is not None and self.row is not None:
            self.row.append(" ".join(" ".join(self.cell).split()))
            self.cell = None
        elif tag == "tr" and self.row is not None and self.rows is not None:
            if any(self.row):
                self.rows.append(tuple(self.row))
            self.row = None
        elif tag == "table" and self.rows is not None:
            if self.rows:
                self.blocks.append(Block("table", rows=tuple(self.rows)))
            self.rows = None
        elif tag == "li":
            self._end_item()
        elif tag in ("ul", "ol") and self.list_depth:
            self.list_depth -= 1
            if self.list_depth == 0 and self.items is not None:
                self._end_item()
                if self.items:
                    self.blocks.append(Block("list", rows=tuple((i,) for i in self.items)))
                self.items = None
        elif tag in _BREAKS:
            self._flush_text()

    def handle_data(self, data: str) -> None:
        if self.skip:
            return
        for target in (self.heading[1] if self.heading else None, self.cell, self.item):
            if target is not None:
                target.append(data)
                return
        if self.rows is None:
            self.text.append(data)

    def _end_item(self) -> None:
        if self.item is not None and self.items is not None:
            text = " ".join(" ".join(self.item).split())
            if text:
                self.items.append(text)
        self.item = None

    def _flush_text(self) -> None:
        text = " ".join(" ".join(self.text).split())
        if text:
            self.blocks.append(Block("text", text=text))
        self.text = []

    def _close_section(self) -> None:
        self._flush_text()
        if self.blocks:
            heading = tuple(title for _, title in self.path)
            self.sections.append(Section(heading, tuple(self.blocks)))
        self.blocks = []


def split_html(text: str) -> list[Section]:
    """The sections of the HTML ``text`` (empty sections left out)."""
    splitter = _Splitter()
    splitter.feed(text)
    splitter.close()
    splitter._close_section()
    return splitter.sections
