"""The agent toolkit: schema look-ups, fuzzy matching and read-only SQL, as LLM tools.

Every tool takes JSON-friendly arguments, returns a JSON-serialisable dict, and answers a
mistake (an unknown table or column, bad arguments) with an error payload an LLM can act on
instead of raising::

    {"error": "unknown table 'salez'", "error_kind": "unknown_table", "suggestions": ["sales"]}

    kit = Toolkit(store, Database("sqlite:///shop.db"), database_name="shop",
                  embedder=MiniLMEmbedder())
    kit.tool_schemas()                                   # OpenAI function-calling format
    kit.call("fuzzy_enum", '{"query": "untied states"}')  # dispatch one tool call
    kit.column_info("customers", "country")

Facts come from the knowledge store (Table, Column and Enum UKF written by the profiler), rows
from the target database through ``Database.execute`` (guarded, read-only, limited).
"""

from __future__ import annotations

import difflib
import functools
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from agents.tools.toolkit_args import (
    TOOL_ARGS,
)
from indices.embeddings import Embedder
from indices.fuzzy_schema import Kind, SchemaIndices
from kb.store import KnowledgeStore
from kb.target.database import Database
from kb.target.results_render import render_results
from kb.visibility import Reader
from ukf import BaseUKF

logger = logging.getLogger(__name__)

MIN_SCORE = 0.3  # fused scores below this are noise (unrelated short strings: 0.1-0.25)
MAX_ENUM_VALUES = 20
RENDER_ROWS = 20
Payload = dict[str, Any]


def error_payload(kind: str, message: str, suggestions: list[str] | None = None) -> Payload:
    """``{"error": message, "error_kind": kind, "suggestions": [...]}``."""
    return {"error": message, "error_kind": kind, "suggestions": list(suggestions or [])}


class _NameError(LookupError):
    def __init__(self, payload: Payload) -> None:
        super().__init__(payload["error"])
        self.payload = payload


def _recovering(method: Callable[..., Payload]) -> Callable[..., Payload]:
    """Turn an unknown-name ``_NameError`` raised inside a tool into its error payload."""

    @functools.wraps(method)
    def tool(*args: Any, **kwargs: Any) -> Payload:
        try:
            return method(*args, **kwargs)
        except _NameError as exc:
            return exc.payload

    return tool


class Toolkit:
    """Schema and SQL tools over one knowledge store and (optionally) one target database.

    Args:
        store: the knowledge store holding Table/Column/Enum UKF.
        database: the target database for ``execute_sql``; None disables that tool.
        database_name: the ``[DATABASE:..]`` tag of the schema entries; None for all.
        embedder: for semantic fuzzy matching; None for spelling (n-gram) matching only.
        reader: whose visibility applies to the knowledge read (None: system access).
        indices: prebuilt fuzzy indices (default: built lazily from ``store``).
    """

    def __init__(
        self,
        store: KnowledgeStore,
        database: Database | None = None,
        *,
        database_name: str | None = None,
        embedder: Embedder | None = None,
        reader: Reader | None = None,
        indices: SchemaIndices | None = None,
    ) -> None:
        self.store, self.database, self.database_name = store, database, database_name
        self.reader = reader
        self.indices = indices or SchemaIndices(
            store, database=database_name, embedder=embedder, reader=reader
        )

    # ---------------------------------------------------------------- tool calling
    def tool_schemas(self) -> list[dict[str, Any]]:
        """Every tool in OpenAI function-calling format (``{"type": "function", ...}``)."""
        return [
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": _description(getattr(self, name)),
                    "parameters": _parameters(model),
                },
            }
            for name, model in TOOL_ARGS.items()
        ]

    def call(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> Payload:
        """Run tool ``name`` with JSON ``arguments``; every failure becomes an error payload."""
        if name not in TOOL_ARGS:
            close = difflib.get_close_matches(name, list(TOOL_ARGS), n=3, cutoff=0.4)
            return error_payload("unknown_tool", f"unknown tool {name!r}", close)
        try:
            raw = json.loads(arguments) if isinstance(arguments, str) else dict(arguments or {})
            args = TOOL_ARGS[name].model_validate(raw)
        except (ValueError, ValidationError) as exc:
            return error_payload("invalid_arguments", f"{name}: {exc}")
        method: Callable[..., Payload] = getattr(self, name)
        try:
            return method(**args.model_dump())
        except Exception as exc:
            logger.exception("tool %s failed", name)
            return error_payload("internal", f"{name} failed: {exc}")

    # ----------------------------------------------------------------------- tools
    def db_info(self) -> Payload:
        """List the database's tables with their descriptions, row counts and column counts.

        Start here to see what data exists; then call table_info on promising tables.
        """
        tables = sorted(self._entries("table"), key=lambda entry: entry.name)
        return {
            "database": self.database_name,
            "dialect": self.database.dialect if self.database else None,
            "tables": [
                {
                    "table": entry.name,
                    "description": entry.description,
                    "row_count": entry.content_resources.get("row_count"),
                    "column_count": len(entry.content_resources.get("columns", [])),
                }
                for entry in tables
            ],
        }

    @_recovering
    def table_info(self, table: str) -> Payload:
        """Describe one table: columns with types and descriptions, keys, joins and size.

        Args:
            table: table name (case-insensitive; unknown names get suggestions).
        """
        entry = self._table(table)
        res = entry.content_resources
        order = {name: i for i, name in enumerate(res.get("columns", []))}
        columns = sorted(
            self._entries("column", related_to=entry.id), key=lambda c: order.get(c.name, 1 << 30)
        )
        referenced_by = [
            {"table": other.name, **_fk_dict(fk)}
            for other in self._entries("table", related_to=entry.id)
            for fk in other.content_resources.get("foreign_keys", [])
            if fk["ref_table"] == entry.name
        ]
        return {
            "table": entry.name,
            "description": entry.description,
            "synonyms": entry.synonyms,
            "row_count": res.get("row_count"),
            "primary_key": res.get("primary_key", []),
            "foreign_keys": [_fk_dict(fk) for fk in res.get("foreign_keys", [])],
            "referenced_by": referenced_by,
            "columns": [_column_summary(column) for column in columns],
        }

    @_recovering
    def column_info(self, table: str, column: str) -> Payload:
        """Profiled facts of one column: types, statistics, examples, synonyms, top values.

        Args:
            table: table name.
            column: column name within the table.
        """
        entry = self._column(self._table(table).name, column)
        res = entry.content_resources
        scope = (str(res.get("table")), entry.name)
        values = sorted(
            self.indices.get("enum").in_scope(scope, exact=True).values(),
            key=lambda value: (-(value.get("count") or 0), str(value.get("value"))),
        )
        return {
            **_column_summary(entry),
            "table": res.get("table"),
            "synonyms": entry.synonyms,
            "examples": res.get("examples", []),
            "statistics": res.get("statistics", {}),
            "enum_value_count": len(values),
            "enum_values": [
                {key: value.get(key) for key in ("value", "count", "frequency", "synonyms")}
                for value in values[:MAX_ENUM_VALUES]
            ],
        }

    def execute_sql(self, sql: str, max_rows: int = 50) -> Payload:
        """Run one read-only SQL query on the target database; errors come back as text.

        Args:
            sql: one SELECT or WITH ... SELECT statement.
            max_rows: at most this many rows are returned (``truncated`` says if more existed).
        """
        if self.database is None:
            return error_payload("no_database", "no target database is connected")
        results = self.database.execute(sql, max_rows=max_rows)
        return {**results.to_dict(), "text": render_results(results, max_rows=RENDER_ROWS)}

    @_recovering
    def fuzzy_column(self, query: str, table: str | None = None, k: int = 10) -> Payload:
        """Find columns whose name, synonyms or description match words loosely.

        Args:
            query: words describing the column, e.g. "order date" or "revenue".
            table: only columns of this table.
            k: number of matches.
        """
        scopes = [(self._table(table).name,)] if table else [()]
        return {"query": query, "matches": self._search("column", query, k, scopes)}

    @_recovering
    def fuzzy_enum(
        self, query: str, table: str | None = None, column: str | None = None, k: int = 10
    ) -> Payload:
        """Find stored column values matching a user's spelling, abbreviation or synonym.

        Use it before filtering on a value: "untied states" finds 'United States'.

        Args:
            query: the value as the user wrote it.
            table: only values of this table.
            column: only values of this column ("table.column", or a name with ``table``).
        """
        scopes = self._enum_scopes(table, column)
        return {"query": query, "matches": self._search("enum", query, k, scopes)}

    # ------------------------------------------------------------------ internals
    def _entries(
        self, kind: Kind, name: str | None = None, related_to: str | None = None
    ) -> list[BaseUKF]:
        """Active entries of ``kind`` in this database (filtered here: tag filters are slow)."""
        found = self.store.iterate(type=kind, name=name, related_to=related_to, reader=self.reader)
        db = self.database_name
        return [e for e in found if db is None or e.content_resources.get("database") == db]

    def _resolve(self, kind: Kind, name: str, scope: tuple[str, ...]) -> BaseUKF:
        """The entry called ``name`` (exact, else case-insensitive), or a ``_NameError``."""
        index = self.indices.get(kind)
        found = index.in_scope((*scope, name), exact=True)
        matches = [] if found else index.search(name, 5, min_score=MIN_SCORE, scope=scope)
        for match in matches:
            if not found and str(match.payload[kind]).casefold() == name.casefold():
                found = index.in_scope(_key(kind, match.payload), exact=True)
        if found:
            return self.store.get(next(iter(found)), reader=self.reader)
        where = f" in table {scope[0]!r}" if scope else ""
        names = list(dict.fromkeys(_label(kind, m.payload) for m in matches))
        raise _NameError(error_payload(f"unknown_{kind}", f"unknown {kind} {name!r}{where}", names))

    def _table(self, table: str) -> BaseUKF:
        return self._resolve("table", table, ())

    def _column(self, table: str, column: str) -> BaseUKF:
        return self._resolve("column", column, (table,))

    def _enum_scopes(self, table: str | None, column: str | None) -> list[tuple[str, ...]]:
        if column and not table and "." in column:
            table, column = column.split(".", 1)
        if table and column:
            found = self._column(self._table(table).name, column)
            return [(found.content_resources["table"], found.name)]
        if table:
            return [(self._table(table).name,)]
        if column:  # a bare column name: every table that has it
            owners = self._entries("column", column) or [self._resolve("column", column, ())]
            return [(entry.content_resources["table"], entry.name) for entry in owners]
        return [()]

    def _search(
        self, kind: Kind, query: str, k: int, scopes: list[tuple[str, ...]]
    ) -> list[Payload]:
        index = self.indices.get(kind)
        found = [m for s in scopes for m in index.search(query, k, min_score=MIN_SCORE, scope=s)]
        found.sort(key=lambda match: -match.score)
        return [
            {
                **match.payload,
                "matched_text": match.text,
                "score": round(match.score, 3),
                "containment": round(match.containment, 3),
                "cosine": None if match.cosine is None else round(match.cosine, 3),
            }
            for match in found[:k]
        ]


def _key(kind: Kind, payload: Payload) -> tuple[str, ...]:
    """The index scope of a table or column match: ``(table,)`` or ``(table, column)``."""
    return (payload["table"],) if kind == "table" else (payload["table"], payload["column"])


def _label(kind: Kind, payload: Payload) -> str:
    """``table`` for tables, ``table.column`` for columns (as suggestions)."""
    return ".".join(_key(kind, payload))


def _column_summary(entry: BaseUKF) -> Payload:
    res = entry.content_resources
    return {
        "column": entry.name,
        "data_type": res.get("data_type", ""),
        "semantic_type": res.get("semantic_type"),
        "nullable": res.get("nullable", True),
        "primary_key": res.get("primary_key", False),
        "description": entry.description,
    }


def _fk_dict(fk: Mapping[str, Any]) -> Payload:
    return {
        "columns": list(fk["columns"]),
        "ref_table": fk["ref_table"],
        "ref_columns": list(fk["ref_columns"]),
    }


def _description(method: Callable[..., Any]) -> str:
    """The docstring up to its ``Args:`` section, as one tool description."""
    doc = (method.__doc__ or "").split("Args:")[0]
    return " ".join(doc.split())


def _parameters(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    schema.pop("description", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    schema.setdefault("properties", {})
    schema.setdefault("required", [])
    return schema
