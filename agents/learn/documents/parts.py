"""A section cut into parts the model can read at once, and the schema text it reads beside.

A section longer than ``max_chars`` is cut between its blocks; a table or a list longer than
that is cut between rows (a table's header repeated in each part), a text block between lines.
"""

from __future__ import annotations

from agents.learn.mine.schema_view import SchemaView
from kb.documents import Block, Section

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


def schema_text(view: SchemaView, max_chars: int = MAX_SCHEMA_CHARS) -> str:
    """``table: column, column (values: 'a', 'b'), ...`` per table, cut at ``max_chars``."""
    columns: dict[str, list[str]] = {}
    for (table_key, column_key), entry in view.columns.items():
        r = entry.content_resources
        values = list(view.enums.get((table_key, column_key), {}).values())
        shown = ", ".join(
            repr(str(v.content_resources.get("value"))) for v in values[:ENUM_VALUES_SHOWN]
        )
        more = ", ..." if len(values) > ENUM_VALUES_SHOWN else ""
        label = f"{r['column']} (values: {shown}{more})" if values else str(r["column"])
        columns.setdefault(str(r["table"]), []).append(label)
    lines = [f"{table}: {', '.join(cols)}" for table, cols in sorted(columns.items())]
    text = "\n".join(lines)
    return text if len(text) <= max_chars else text[:max_chars].rsplit("\n", 1)[0] + "\n..."
