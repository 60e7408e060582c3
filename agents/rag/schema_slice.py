"""The schema slice of a prompt: the tables that matter, as compact annotated DDL.

``SchemaCatalog`` holds the profiled Table and Column entries of one database (reloaded when
the store's version moves). ``SchemaCatalog.render(tables, ...)`` writes them as
``CREATE TABLE`` statements with typed columns, keys, foreign keys and, as comments,
descriptions and example values. Wide tables keep their key, joined and mentioned columns
in full and list the rest by name; tables past the token budget shrink to one line, and
past a listing budget to their name.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.rag.store_watch import StoreWatch
from indices.evidence import estimate_tokens
from kb.store import KnowledgeStore
from ukf import BaseUKF


@dataclass
class TableSchema:
    entry: BaseUKF
    columns: list[BaseUKF] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.entry.content_resources.get("table") or self.entry.name

    @property
    def foreign_keys(self) -> list[dict]:
        return list(self.entry.content_resources.get("foreign_keys") or [])


COMPACT_COLUMNS = 12


class NotProfiledError(ValueError):
    """A database with no profiled tables: a prompt without a schema only invites guesses."""


class SchemaCatalog:
    """Profiled tables and columns of ``database`` in ``store``, in table order."""

    def __init__(self, store: KnowledgeStore, database: str) -> None:
        self.store, self.database = store, database
        self._tables: dict[str, TableSchema] = {}
        self._watch = StoreWatch(store, ("table", "column"), database)
        self._lock = threading.Lock()
        # derived from the tables, dropped when they reload: the overview is the same text
        # for every question, so it is written once per schema, not once per question
        self._families: dict[str, list[str]] | None = None
        self._overviews: dict[tuple, SchemaSlice] = {}

    @property
    def tables(self) -> dict[str, TableSchema]:
        """Table name -> schema, reloaded when the store has changed."""
        return self._snapshot()[0]

    def require_tables(self) -> None:
        """Raise :class:`NotProfiledError` when the store holds no table of the database."""
        if not self.tables:
            raise NotProfiledError(
                f"database {self.database!r} has no profiled tables in the knowledge base: "
                f"profile it first (almanac init --db URL --name {self.database}, or a "
                "profile job)"
            )

    def _snapshot(
        self,
    ) -> tuple[dict[str, TableSchema], dict[str, list[str]], dict[tuple, SchemaSlice]]:
        """(tables, their families, overviews written from them), of one load."""
        with self._lock:
            if self._watch.changed():
                self._tables = self._load()
                self._families, self._overviews = None, {}
            if self._families is None:
                self._families = _families(self._tables)
            return self._tables, self._families, self._overviews

    def _load(self) -> dict[str, TableSchema]:
        tables: dict[str, TableSchema] = {}
        for entry in self.store.iterate(type="table"):
            if entry.content_resources.get("database") == self.database:
                tables[entry.content_resources.get("table") or entry.name] = TableSchema(entry)
        for entry in self.store.iterate(type="column"):
            r = entry.content_resources
            if r.get("database") == self.database and r.get("table") in tables:
                tables[r["table"]].columns.append(entry)
        for table in tables.values():
            order = {name: i for i, name in enumerate(table.entry.content_resources["columns"])}
            table.columns.sort(key=lambda c: order.get(c.content_resources["column"], 1 << 30))
        return dict(sorted(tables.items()))

    def families(self) -> dict[str, list[str]]:
        """Tables with the very same columns (names and types), by their first member:
        ``{"income_aurora": ["income_aurora", "income_borealis", ...]}`` (two or more)."""
        return self._snapshot()[1]

    def overview(
        self,
        *,
        budget_tokens: int = 1200,
        max_columns: int = 24,
        examples: bool = True,
        listing_tokens: int | None = None,
    ) -> SchemaSlice:
        """The same DDL for every question: each family of identical tables written once (its
        first member, after a line naming the others), families first, then the other tables
        in catalog (name) order; in full while ``budget_tokens`` last, then listed, then
        named.

        For databases too large to show whole: a question-specific slice changes the prompt
        from its first tables on, so a local model prefills the whole schema for every
        question; this one stays cached (the question's tables come in the hints).
        """
        known, families, overviews = self._snapshot()
        key = (budget_tokens, max_columns, examples, listing_tokens)
        written = overviews.get(key)
        if written is None:
            written = overviews[key] = _overview(known, families, *key)
        return SchemaSlice(
            written.text, list(written.full), list(written.listed), list(written.named)
        )

    def render(self, tables: Sequence[str] | None = None, **options: Any) -> str:
        """DDL for ``tables`` (default: all), most relevant first: :meth:`slice`'s text."""
        return self.slice(tables, **options).text

    def slice(
        self,
        tables: Sequence[str] | None = None,
        *,
        mentioned_columns: Iterable[tuple[str, str]] = (),
        budget_tokens: int = 1200,
        max_columns: int = 24,
        examples: bool = True,
        listing_tokens: int | None = None,
        min_full: int = 1,
    ) -> SchemaSlice:
        """DDL for ``tables`` (default: all), most relevant first; when the whole database
        fits in full, in the catalog's (name) order instead, the same for every question.

        Args:
            tables: table names in order of relevance; unknown names are skipped.
            mentioned_columns: (table, column) pairs the question refers to: always shown.
            budget_tokens: past it, tables are listed in one line each.
            max_columns: columns shown in full per table; the others are listed by name.
            examples: add example values and descriptions as comments.
            listing_tokens: the one-line listings past the budget stop at this many tokens;
                the tables after them are named in a last line (None: list them all, as a
                baseline showing the whole schema must).
            min_full: the first this many tables are shown as DDL even past the budget (with
                at most ``COMPACT_COLUMNS`` columns in full when they do not fit).
        """
        known = self.tables
        names = [t for t in (tables if tables is not None else known) if t in known]
        mentioned = {(t.lower(), c.lower()) for t, c in mentioned_columns}
        out = SchemaSlice()
        parts: list[str] = []
        ddl: dict[str, str] = {}
        used = listed = 0
        compacted = False
        for name in names:
            full = _table_ddl(known[name], mentioned, max_columns, examples)
            cost = estimate_tokens(full)
            if used + cost > budget_tokens and parts and len(out.full) < min_full:
                full = _table_ddl(
                    known[name], mentioned, min(max_columns, COMPACT_COLUMNS), examples
                )
                cost = min(cost, estimate_tokens(full))
                compacted = True
            elif used + cost > budget_tokens and parts:
                full = ""
            if full:
                parts.append(full)
                ddl[name] = full
                out.full.append(name)
                used += cost
                continue
            line = _table_line(known[name])
            listed = _list_or_name(out, parts, line, [name], listed, listing_tokens)
        if out.named:
            parts.append(f"-- more tables: {', '.join(out.named)}")
        if len(out.full) == len(known) and not compacted:
            # the whole database, every table in full: in catalog order, so every question on
            # this database starts with the same prompt (llama.cpp reuses the cached prefix)
            parts = [ddl[name] for name in known]
        out.text = "\n\n".join(parts)
        return out


@dataclass
class SchemaSlice:
    """A rendered schema slice and which tables it shows how.

    Attributes:
        text: the DDL.
        full: tables written as ``CREATE TABLE``.
        listed: tables written as one line of column names.
        named: tables only named.
    """

    text: str = ""
    full: list[str] = field(default_factory=list)
    listed: list[str] = field(default_factory=list)
    named: list[str] = field(default_factory=list)


def _table_ddl(
    table: TableSchema, mentioned: set[tuple[str, str]], max_columns: int, examples: bool
) -> str:
    r = table.entry.content_resources
    pk = list(r.get("primary_key") or [])
    fk_columns = {c for fk in table.foreign_keys for c in fk["columns"]}
    keep = _columns_in_full(table, mentioned, pk, fk_columns, max_columns)
    head = f"CREATE TABLE {_quote(table.name)} ("
    if examples and (table.entry.description or r.get("row_count") is not None):
        notes = [table.entry.description.strip()] if table.entry.description else []
        if r.get("row_count") is not None:
            notes.append(f"{r['row_count']} rows")
        head += "  -- " + "; ".join(notes)
    lines = [head]
    body: list[str] = []
    for column in table.columns:
        if column.content_resources["column"] in keep:
            body.append(_column_line(column, single_pk=pk, examples=examples))
    if len(pk) > 1:
        body.append(f"  PRIMARY KEY ({', '.join(_quote(c) for c in pk)})")
    for fk in table.foreign_keys:
        body.append(
            f"  FOREIGN KEY ({', '.join(_quote(c) for c in fk['columns'])}) REFERENCES "
            f"{_quote(fk['ref_table'])}({', '.join(_quote(c) for c in fk['ref_columns'])})"
        )
    lines.append(_join_definitions(body))
    lines.append(");")
    rest = [c.content_resources["column"] for c in table.columns]
    rest = [c for c in rest if c not in keep]
    if rest:
        lines.append(f"-- {table.name} also has columns: {', '.join(rest)}")
    return "\n".join(lines)


def _join_definitions(body: list[str]) -> str:
    """Definitions separated by commas, placed before any trailing ``--`` comment."""
    out = []
    for i, line in enumerate(body):
        code, sep, comment = line.partition("  -- ")
        comma = "," if i < len(body) - 1 else ""
        out.append(f"{code}{comma}{sep}{comment}" if sep else f"{code}{comma}")
    return "\n".join(out)


def _columns_in_full(
    table: TableSchema,
    mentioned: set[tuple[str, str]],
    pk: list[str],
    fk_columns: set[str],
    max_columns: int,
) -> set[str]:
    names = [c.content_resources["column"] for c in table.columns]
    if len(names) <= max_columns:
        return set(names)
    first = [
        n
        for n in names
        if n in pk or n in fk_columns or (table.name.lower(), n.lower()) in mentioned
    ]
    keep = set(first)
    for n in names:
        if len(keep) >= max(max_columns, len(first)):
            break
        keep.add(n)
    return keep


def _column_line(column: BaseUKF, *, single_pk: list[str], examples: bool) -> str:
    r = column.content_resources
    line = f"  {_quote(r['column'])} {r.get('data_type') or ''}".rstrip()
    if len(single_pk) == 1 and single_pk[0] == r["column"]:
        line += " PRIMARY KEY"
    if not examples:
        return line
    notes = []
    if column.description:
        notes.append(column.description.strip())
    shown = _examples(r)
    if shown:
        notes.append("e.g. " + ", ".join(shown))
    return f"{line}  -- {'; '.join(notes)}" if notes else line


def _examples(resources: dict) -> list[str]:
    if resources.get("semantic_type") in ("identifier", None) and resources.get("primary_key"):
        return []
    values = []
    for value in (resources.get("examples") or [])[:3]:
        if isinstance(value, str):
            text = value if len(value) <= 30 else value[:27] + "..."
            values.append("'" + text.replace("'", "''") + "'")
        elif value is not None:
            values.append(str(value))
    return values


def _families(known: dict[str, TableSchema]) -> dict[str, list[str]]:
    groups: dict[tuple, list[str]] = {}
    for name, table in known.items():
        shape = tuple(
            (c.content_resources["column"], c.content_resources.get("data_type") or "")
            for c in table.columns
        )
        if shape:
            groups.setdefault(shape, []).append(name)
    return {members[0]: members for members in groups.values() if len(members) > 1}


def _overview(
    known: dict[str, TableSchema],
    families: dict[str, list[str]],
    budget_tokens: int,
    max_columns: int,
    examples: bool,
    listing_tokens: int | None,
) -> SchemaSlice:
    member_of = {m: first for first, members in families.items() for m in members}
    # families first: tables repeated per department, region or year are the fact tables
    order = [*families, *(n for n in known if n not in member_of)]
    out = SchemaSlice()
    parts: list[str] = []
    used = listed = 0
    for name in order:
        members = families.get(name, [name])
        full = _table_ddl(known[name], set(), max_columns, examples)
        if len(members) > 1:
            full = f"-- {len(members)} tables with the same columns: {', '.join(members)}\n" + full
        cost = estimate_tokens(full)
        if used + cost <= budget_tokens or not parts:
            parts.append(full)
            out.full.extend(members)
            used += cost
            continue
        line = _table_line(known[name])
        if len(members) > 1:
            line += f"  -- also: {', '.join(members[1:])}"
        listed = _list_or_name(out, parts, line, members, listed, listing_tokens)
    if out.named:
        parts.append(f"-- more tables: {', '.join(out.named)}")
    out.text = "\n\n".join(parts)
    return out


def _list_or_name(
    out: SchemaSlice,
    parts: list[str],
    line: str,
    tables: list[str],
    listed: int,
    listing_tokens: int | None,
) -> int:
    """List ``tables`` in ``line`` while ``listing_tokens`` last, else only name them (in the
    last line); returns the tokens listed so far."""
    cost = estimate_tokens(line)
    if listing_tokens is None or listed + cost <= listing_tokens:
        parts.append(line)
        out.listed.extend(tables)
        return listed + cost
    out.named.extend(tables)
    return listed


def _table_line(table: TableSchema) -> str:
    cols = ", ".join(c.content_resources["column"] for c in table.columns)
    return f"-- table {table.name}({cols})"


def _quote(name: str) -> str:
    if name.replace("_", "").isalnum() and not name[:1].isdigit():
        return name
    return '"' + name.replace('"', '""') + '"'
