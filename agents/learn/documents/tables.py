"""The model-free pass over a document's tables: rows keyed by a stored value, and glossaries.

Runs before the model in the same extraction (:mod:`agents.learn.documents.run`) and gives
the same UKF shapes as :mod:`agents.learn.documents.build`:

- **rows keyed by a stored value**: in each row, an *anchor* is a cell whose text is a
  profiled enum value of some column (case-insensitive, exact; ``| CHN | Greater China |
  China region, GC region |``). When the value is an enum of several columns (AutoFin's
  ``region_code`` is in 19 tables), the column the header names comes first, then the
  smallest table (the dimension). A column of the table whose values repeat is no key: its
  cells anchor nothing. The row's other cells under a *name* header (``name``, ``model``,
  ``stands for``...) are whole synonyms, those under an *alias* header (``also called``,
  ``also said``, ``aliases``, ``nickname``, ``synonyms``, ``a.k.a.``) are split on commas
  and semicolons; each becomes a synonym of the leftmost anchor's Enum entry (a value
  mapping, as :func:`build._value` makes it; one phrase names one value, or the merge drops
  the disagreeing candidates). Skipped, and counted by reason: cells under other headers
  (``not_name_column``; ``enum_value`` when they are anchors too), names that are enum
  values of another table than the anchor's (``enum_value``; a stored value of the anchor's
  own table, ``region_name`` beside ``region_code``, is the row's name: kept), numbers,
  prices, sentences of more than :data:`MAX_WORDS` words, the anchor's
  own value (``repeats_anchor``) and table or column names (``element_name``).
- **glossaries** (a header with a term and a meaning or definition): the columns the
  meaning names (backticked, or a ``snake_case`` name; ``ptd_amt_*`` expands to the existing
  columns; a name compared to a value, ``report_item_level1 = 'x'``, is a condition and
  does not count) get the term, its "stands for" and its "also said" phrases as synonyms;
  more than :data:`MAX_COLUMN_SYNONYMS` columns give one glossary
  :class:`ukf.KnowledgeUKF` instead, as a term naming no single element does in
  :mod:`.build`. An abbreviation (a row with a "stands for" cell: ``FY``, ``YoY``, ``GM``)
  whose meaning names no existing column gives that glossary entry too (the term, its
  "stands for" and "also said" phrases as synonyms, the meaning as content), as
  :func:`build._term` does for a term naming no element — unless the term is itself a table
  or column name (``element_name``). A plain word's meaning naming no column
  (``| vocalist | a singer |``) may name an element in words: left to the model
  (``no_column``).
"""

from __future__ import annotations

import fnmatch
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from agents.learn.documents.build import GLOSSARY_COLLECTION, Origin
from agents.learn.documents.item_checks import element_names, fold
from agents.learn.documents.table_codes import StoredValue, stored_column
from agents.learn.mine.entries import MINED_COLLECTION, phrase_name, qualified
from agents.learn.mine.schema_view import SchemaView
from kb.documents import Block, Document
from ukf import BaseUKF, KnowledgeUKF, SynonymUKF

MAX_WORDS = 8
MAX_COLUMN_SYNONYMS = 3
_ALIAS = re.compile(
    r"\b(?:also (?:called|said|known as)|alias(?:es)?|nick ?names?|synonyms?|a\.?k\.?a\.?)\b"
)
_NAME = re.compile(r"^(?:(?:full |display |short |long )?names?|models?|titles?|labels?|"
                   r"stands for|expansion|full form|long form|[a-z ]+ name)$")  # fmt: skip
_TERM = re.compile(r"^(?:terms?|abbreviations?|acronyms?)$")
_MEANING = re.compile(r"^(?:meaning|definition|description|explanation)$")
_STANDS = re.compile(r"^(?:stands for|expansion|full form|long form)$")
_NUMBER = re.compile(r"^[+-]?[\d.,\s]+%?$")
_PRICE = re.compile(r"[$€£¥]|\b(?:usd|eur|gbp|cny|jpy)\b", re.I)
_IDENTIFIER = re.compile(r"`([^`]+)`|\b([A-Za-z][A-Za-z0-9]*(?:_(?:[A-Za-z0-9]+|\*))+)")
_COMPARED = re.compile(r"^\s*(?:=|<>|!=|<=|>=|<|>|in\b|like\b|not\b)", re.I)


@dataclass
class TableStats:
    """What the table pass read and gave (JSON-ready through :meth:`to_dict`)."""

    tables: int = 0
    rows_read: int = 0
    rows_anchored: int = 0
    glossary_rows: int = 0
    glossary_knowledge: int = 0
    """Glossary rows given as one glossary entry (naming no column, or too many)."""
    entries: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)

    def add(self, other: TableStats) -> None:
        self.tables += other.tables
        self.rows_read += other.rows_read
        self.rows_anchored += other.rows_anchored
        self.glossary_rows += other.glossary_rows
        self.glossary_knowledge += other.glossary_knowledge
        self.entries.update(other.entries)
        self.skipped.update(other.skipped)

    def to_dict(self) -> dict[str, object]:
        return {
            "tables": self.tables,
            "rows_read": self.rows_read,
            "rows_anchored": self.rows_anchored,
            "glossary_rows": self.glossary_rows,
            "glossary_knowledge": self.glossary_knowledge,
            "entries": dict(self.entries),
            "skipped": dict(self.skipped),
        }


@dataclass
class TablePass:
    """The entries of a document's tables, and which sections they cover completely."""

    entries: list[BaseUKF] = field(default_factory=list)
    stats: TableStats = field(default_factory=TableStats)
    covered_sections: set[int] = field(default_factory=set)
    """Indexes of the sections made only of tables whose every row gave an entry."""


OriginFor = Callable[[str, int, int], Origin]  # (section locator, table, row) → origin


def table_pass(document: Document, view: SchemaView, origin_for: OriginFor) -> TablePass:
    """The model-free entries of every table of ``document`` (see the module docstring)."""
    done = TablePass()
    values = _value_index(view)
    for s, section in enumerate(document.sections):
        tables = [b for b in section.blocks if b.kind == "table" and len(b.rows) > 1]
        all_covered = bool(tables) and len(tables) == len(section.blocks)
        for t, block in enumerate(tables, 1):
            reader = _TableReader(block, view, values, done.stats)
            covered = reader.read(partial(origin_for, section.locator, t))
            done.entries += reader.entries
            all_covered = all_covered and covered
        if all_covered:
            done.covered_sections.add(s)
    for entry in done.entries:
        done.stats.entries[_kind(entry)] += 1
    return done


def _kind(entry: BaseUKF) -> str:
    if entry.type in {"knowledge", "predicate"}:
        return "predicate" if entry.type == "predicate" else "knowledge"
    return "value_synonym" if entry.content_resources.get("value") is not None else "synonym"


def _value_index(view: SchemaView) -> dict[str, list[tuple[str, str]]]:
    """Folded enum value → the (table, column) keys holding it."""
    index: dict[str, list[tuple[str, str]]] = {}
    for key, values in view.enums.items():
        for value in values:
            index.setdefault(value, []).append(key)
    return index


def _clean(cell: str) -> str:
    return " ".join(cell.strip().strip("`*_\"'").split())


def _header(cell: str) -> str:
    return " ".join(re.findall(r"[a-z0-9.&]+", cell.casefold()))


class _TableReader:
    """One table block read row by row."""

    def __init__(
        self,
        block: Block,
        view: SchemaView,
        values: dict[str, list[tuple[str, str]]],
        stats: TableStats,
    ) -> None:
        self.view, self.values, self.stats = view, values, stats
        self.header = [_header(c) for c in block.rows[0]]
        self.rows = [[_clean(c) for c in row] for row in block.rows[1:]]
        self.entries: list[BaseUKF] = []
        self.elements = element_names(view)
        width = len(self.header)
        self.keys = [i for i in range(width) if self._is_key(i)]
        self.stored = {i: c for i in self.keys if (c := self._stored_column(i)) is not None}
        self.glossary = self._glossary_columns()

    def _column_cells(self, i: int) -> list[str]:
        return [row[i].casefold() for row in self.rows if i < len(row) and row[i]]

    def _is_key(self, i: int) -> bool:
        cells = self._column_cells(i)
        return len(cells) == len(set(cells))

    def _stored_column(self, i: int) -> BaseUKF | None:
        """The target column a key column of codes no enum anchors names (see
        :mod:`.table_codes`), or None."""
        cells = [row[i] for row in self.rows if i < len(row) and row[i]]
        if any(c.casefold() in self.values for c in cells):
            return None
        return stored_column(self.view, self.header[i] if i < len(self.header) else "", cells)

    def _glossary_columns(self) -> tuple[int, int, int | None] | None:
        term = next((i for i, h in enumerate(self.header) if _TERM.match(h)), None)
        meaning = next((i for i, h in enumerate(self.header) if _MEANING.match(h)), None)
        stands = next((i for i, h in enumerate(self.header) if _STANDS.match(h)), None)
        return (term, meaning, stands) if term is not None and meaning is not None else None

    def read(self, origin_for: Callable[[int], Origin]) -> bool:
        """Read every row; whether every row gave at least one entry."""
        self.stats.tables += 1
        covered = True
        for n, row in enumerate(self.rows, 1):
            self.stats.rows_read += 1
            before = len(self.entries)
            origin = origin_for(n)
            self._anchored(row, origin)
            if self.glossary is not None:
                self._glossary(row, origin)
            covered = covered and len(self.entries) > before
        return covered

    def _cell(self, row: list[str], i: int | None) -> str:
        return row[i] if i is not None and i < len(row) else ""

    def _anchor(self, row: list[str], i: int) -> BaseUKF | StoredValue | None:
        """The Enum entry the cell names (the header's column first, then the smallest
        table's), the stored value of a key column of codes, or None."""
        text = self._cell(row, i)
        if not text or _NUMBER.match(text) or i not in self.keys:
            return None
        if i in self.stored:
            found = self.view.value_check(self.stored[i], text) == "found"
            return StoredValue(self.stored[i], text) if found else None
        keys = self.values.get(text.casefold())
        if not keys:
            return None
        words = set(self.header[i].split()) if i < len(self.header) else set()

        def rank(key: tuple[str, str]) -> tuple[int, int, str]:
            named = bool(words & set(re.split(r"[_\s]+", f"{key[0]} {key[1]}")))
            table = self.view.tables.get(key[0])
            rows = table.content_resources.get("row_count") if table is not None else None
            size = int(str(rows)) if str(rows).isdigit() else 1 << 62
            return (not named, size, "/".join(key))

        best = min(keys, key=rank)
        return self.view.enums[best][text.casefold()]

    def _anchored(self, row: list[str], origin: Origin) -> None:
        anchors = {i: a for i in range(len(row)) if (a := self._anchor(row, i)) is not None}
        if not anchors:
            return
        self.stats.rows_anchored += 1
        first = min(anchors)
        anchor = anchors[first]  # the leftmost: one phrase means one value
        home = _home(anchor)
        phrases: list[str] = []
        for i, cell in enumerate(row):
            if i == first or not cell:
                continue
            header = self.header[i] if i < len(self.header) else ""
            if _ALIAS.search(header):
                parts = [p.strip() for p in re.split(r"[;,]", cell)]
            elif _NAME.match(header):
                parts = [cell]
            else:
                self.stats.skipped["enum_value" if i in anchors else "not_name_column"] += 1
                continue
            phrases += [p for p in parts if self._phrase_ok(p, anchor, home)]
        for phrase in dict.fromkeys(phrases):
            if isinstance(anchor, StoredValue):
                self.entries.append(anchor.predicate(phrase, origin))
            else:
                self.entries.append(_value_synonym(phrase, anchor, origin))

    def _phrase_ok(self, phrase: str, anchor: BaseUKF | StoredValue, home: str) -> bool:
        """Whether ``phrase`` (a name or an alias cell's part) is a synonym of ``anchor``;
        the skip counted by reason when not. A stored value of another column of the
        anchor's own table (``region_name`` beside ``region_code``) is the row's name: kept."""
        reason = None
        stored = self.values.get(phrase.casefold(), [])
        if not phrase:
            reason = "empty"
        elif _NUMBER.match(phrase):
            reason = "number"
        elif _PRICE.search(phrase) and re.search(r"\d", phrase):
            reason = "price"
        elif len(phrase.split()) > MAX_WORDS:
            reason = "long"
        elif fold(phrase) == fold(_anchor_value(anchor)):
            reason = "repeats_anchor"
        elif stored and all(table != home for table, _column in stored):
            reason = "enum_value"
        elif fold(phrase) in self.elements:
            reason = "element_name"
        if reason is not None:
            self.stats.skipped[reason] += 1
        return reason is None

    def _glossary(self, row: list[str], origin: Origin) -> None:
        assert self.glossary is not None
        term_at, meaning_at, stands_at = self.glossary
        term, meaning = self._cell(row, term_at), self._cell(row, meaning_at)
        if not term or not meaning:
            self.stats.skipped["empty"] += 1
            return
        self.stats.glossary_rows += 1
        columns = self._named_columns(meaning)
        stands = self._cell(row, stands_at)
        aliases = [stands] if stands else []
        for i, cell in enumerate(row):
            if i < len(self.header) and _ALIAS.search(self.header[i]) and cell:
                aliases += [p.strip() for p in re.split(r"[;,]", cell) if p.strip()]
        aliases = [a for a in dict.fromkeys(aliases) if fold(a) != fold(term)]
        if not columns and not stands:
            self.stats.skipped["no_column"] += 1  # a word's meaning may name an element
            return
        if not columns or len(columns) > MAX_COLUMN_SYNONYMS:
            if not columns and fold(term) in self.elements:
                self.stats.skipped["element_name"] += 1
                return
            content = f"{term} ({stands}): {meaning}" if stands else f"{term}: {meaning}"
            self.entries.append(
                KnowledgeUKF.create(
                    term,
                    content,
                    database=origin.database,
                    synonyms=aliases,
                    collection=GLOSSARY_COLLECTION,
                    content_resources={"kind": "glossary"},
                    **origin.fields("glossary_row"),
                )
            )
            self.stats.glossary_knowledge += 1
            return
        for column in columns:
            own = {fold(str(column.content_resources["column"])), fold(qualified(column))}
            for phrase in [term, *aliases]:
                if fold(phrase) in own or fold(phrase) in self.elements:
                    self.stats.skipped["element_name"] += 1
                    continue
                self.entries.append(
                    SynonymUKF.create(
                        phrase_name(phrase),
                        column,
                        target_name=qualified(column),
                        database=origin.database,
                        collection=MINED_COLLECTION,
                        description=meaning,
                        **origin.fields("glossary_row"),
                    )
                )

    def _named_columns(self, meaning: str) -> list[BaseUKF]:
        """The existing columns ``meaning`` names (not those it compares to a value)."""
        found: dict[str, BaseUKF] = {}
        for match in _IDENTIFIER.finditer(meaning):
            name = (match.group(1) or match.group(2)).strip().casefold()
            if _COMPARED.match(meaning[match.end() :]):
                continue
            for (_table, column), entry in self.view.columns.items():
                if fnmatch.fnmatchcase(column, name) or f"{_table}.{column}" == name:
                    found.setdefault(entry.id, entry)
        return list(found.values())


def _home(anchor: BaseUKF | StoredValue) -> str:
    """The anchor's table (folded)."""
    if isinstance(anchor, StoredValue):
        return anchor.table.casefold()
    return str(anchor.content_resources.get("table", "")).casefold()


def _anchor_value(anchor: BaseUKF | StoredValue) -> str:
    if isinstance(anchor, StoredValue):
        return anchor.value
    return str(anchor.content_resources.get("value"))


def _value_synonym(phrase: str, enum: BaseUKF, origin: Origin) -> SynonymUKF:
    r = enum.content_resources
    return SynonymUKF.create(
        phrase_name(phrase),
        enum,
        target_name=f"{r['column']} = '{r.get('value')}'",
        database=origin.database,
        collection=MINED_COLLECTION,
        **origin.fields("table_row"),
    )
