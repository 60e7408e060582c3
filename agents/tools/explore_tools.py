"""The explorer's tools: toolkit look-ups plus string and facet search, with their findings.

:class:`ExploreTools` runs one tool call for :mod:`agents.rag.explore` and says which knowledge
entries the result names (``(ukf id, summary)`` pairs). Toolkit results name tables, columns
and values, not ids, so ids are resolved through the toolkit's fuzzy schema indices; string
and facet search answer with ids directly. Every failure is an error payload for the model.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agents.tools.toolkit import Toolkit, error_payload
from indices.facet import FacetIndex
from indices.string import StringIndex
from ukf import BaseUKF

DEFAULT_TOOLS = ("fuzzy_enum", "fuzzy_column", "column_info", "string_search", "facet_search")
Payload = dict[str, Any]
Surfaced = list[tuple[str, str]]
_FUZZY = ("fuzzy_enum", "fuzzy_column")
_UNKNOWN_NAME = ("unknown_table", "unknown_column")
_MAX_SUGGESTED_TABLES = 30
# result fields that only cost the model tokens
_NOISE = frozenset(
    {"containment", "cosine", "frequency", "cumulative_frequency", "counts_exact", "exact"}
    | {"quartiles_exact", "sample_size", "sampled"}
)


class StringSearchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(description="Words or a phrase from the question, e.g. 'Nova revenue'.")


class FacetSearchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tags: dict[str, str | list[str]] = Field(
        description="Slot to value(s), e.g. {'TABLE': 'orders'}; '*' is a wildcard."
    )
    type: str | None = Field(None, description="Only entries of this type, e.g. 'metric'.")
    limit: int = Field(10, ge=1, le=50, description="Number of entries.")


SEARCH_TOOLS: dict[str, tuple[type[BaseModel], str]] = {
    "string_search": (
        StringSearchArgs,
        "Find knowledge (tables, columns, values, metrics, rules) whose name or synonym "
        "appears word for word in a text.",
    ),
    "facet_search": (
        FacetSearchArgs,
        "List knowledge by tags: DATABASE, TABLE, COLUMN, ENUM, METRIC_KIND, RULE_KIND.",
    ),
}


class ExploreTools:
    """The tools offered to the explorer, run one call at a time.

    Args:
        toolkit: Schema tools over the store (its ``reader`` and ``database_name`` apply to
            every tool, the searches included).
        string_index: Enables ``string_search``.
        facet_index: Enables ``facet_search``.
        names: Tool names offered; unavailable ones are left out.

    Raises:
        ValueError: none of ``names`` is available.
    """

    def __init__(
        self,
        toolkit: Toolkit,
        *,
        string_index: StringIndex | None = None,
        facet_index: FacetIndex | None = None,
        names: Sequence[str] = DEFAULT_TOOLS,
    ) -> None:
        self.toolkit, self.string_index, self.facet_index = toolkit, string_index, facet_index
        self._schemas = {t["function"]["name"]: t["function"] for t in toolkit.tool_schemas()}
        available = set(self._schemas)
        available |= {"string_search"} if string_index is not None else set()
        available |= {"facet_search"} if facet_index is not None else set()
        self.names = [name for name in dict.fromkeys(names) if name in available]
        if not self.names:
            raise ValueError(f"none of the tools {list(names)} is available: {sorted(available)}")

    def specs(self) -> list[dict[str, str]]:
        """``{"name", "signature", "description"}`` of each tool, for the prompt."""
        specs = []
        for name in self.names:
            if name in SEARCH_TOOLS:
                model, description = SEARCH_TOOLS[name]
                parameters = model.model_json_schema()
            else:
                description = self._schemas[name]["description"]
                parameters = self._schemas[name]["parameters"]
            specs.append({"name": name, "description": description, "signature": _sig(parameters)})
        return specs

    def run(self, tool: str, arguments: Any) -> tuple[Payload, Surfaced]:
        """The result of one call and the entries it names (none when it failed)."""
        if tool not in self.names:
            close = difflib.get_close_matches(tool, self.names, n=3, cutoff=0.4)
            return error_payload("unknown_tool", f"unknown tool {tool!r}", close or self.names), []
        if not isinstance(arguments, dict):
            return error_payload("invalid_arguments", f"{tool}: arguments must be an object"), []
        if tool in SEARCH_TOOLS:
            return self._search(tool, arguments)
        payload = self.toolkit.call(tool, arguments)
        if payload.get("error_kind") in _UNKNOWN_NAME:
            payload = self._recover(tool, arguments, payload)
        return payload, [] if "error" in payload else self._surfaced(tool, payload)

    def _recover(self, tool: str, arguments: dict[str, Any], failed: Payload) -> Payload:
        """A fuzzy search scoped to an unknown table or column searches everywhere instead
        (small models guess names); other unknown names get the table list as suggestions."""
        scoped = {k: v for k, v in arguments.items() if k not in ("table", "column")}
        if tool in _FUZZY and scoped != arguments:
            payload = self.toolkit.call(tool, scoped)
            if "error" not in payload:
                return {**payload, "note": f"{failed['error']}: searched every table instead"}
        if failed["error_kind"] == "unknown_table" and not failed.get("suggestions"):
            tables = [t["table"] for t in self.toolkit.db_info()["tables"]]
            return {**failed, "suggestions": tables[:_MAX_SUGGESTED_TABLES]}
        return failed

    # ------------------------------------------------------------------ internals
    def _surfaced(self, tool: str, payload: Mapping[str, Any]) -> Surfaced:
        """``(ukf id, summary)`` of the schema entries a toolkit result names."""
        if tool in ("fuzzy_enum", "fuzzy_column"):
            items = list(payload.get("matches", []))
        elif tool == "column_info":
            items = [payload]
        elif tool == "table_info":
            items = [{"table": payload.get("table"), "description": payload.get("description")}]
        else:
            items = []
        surfaced = []
        for item in items:
            kind = "enum" if "value" in item else "column" if item.get("column") else "table"
            ukf_id = self._schema_id(kind, item)
            if ukf_id is not None:
                surfaced.append((ukf_id, _schema_summary(kind, item)))
        return surfaced

    def _schema_id(self, kind: str, item: Mapping[str, Any]) -> str | None:
        scope = (item.get("table"),) if kind == "table" else (item.get("table"), item.get("column"))
        if not all(isinstance(part, str) for part in scope):
            return None
        ids = self.toolkit.indices.get(kind).in_scope(scope, exact=True)  # type: ignore[arg-type]
        for ukf_id, payload in ids.items():
            if kind != "enum" or payload.get("value") == item.get("value"):
                return ukf_id
        return None

    def _search(self, tool: str, arguments: dict[str, Any]) -> tuple[Payload, Surfaced]:
        model, _ = SEARCH_TOOLS[tool]
        try:
            args = model.model_validate(arguments)
        except ValidationError as exc:
            return error_payload("invalid_arguments", f"{tool}: {exc}"), []
        if isinstance(args, StringSearchArgs):
            assert self.string_index is not None
            why = {
                uid: f"matched {m.text!r}" for m in self.string_index.search(args.text)
                for uid in m.ukf_ids
            }  # fmt: skip
        else:
            assert self.facet_index is not None and isinstance(args, FacetSearchArgs)
            criteria = {"type": args.type} if args.type else {}
            try:
                hits = self.facet_index.search(
                    args.tags, reader=self.toolkit.reader, limit=args.limit, **criteria
                )
            except ValueError as exc:  # a malformed tag
                return error_payload("invalid_arguments", f"{tool}: {exc}"), []
            why = {hit.ukf_id: f"tags {hit.phrase}" for hit in hits}
        entries = [
            e
            for e in self.toolkit.store.get_many(why, reader=self.toolkit.reader).values()
            if self._in_database(e)
        ]
        rows = [_entry_row(e) for e in entries]
        surfaced = [(e.id, f"{_entry_label(e)} ({why[e.id]})") for e in entries]
        return {"entries": rows, "count": len(rows)}, surfaced

    def _in_database(self, entry: BaseUKF) -> bool:
        db = self.toolkit.database_name
        return db is None or not entry.has_tag("DATABASE") or entry.has_tag("DATABASE", db)


def result_text(payload: Mapping[str, Any], max_chars: int) -> str:
    """Compact JSON of a tool result, cut to ``max_chars`` (marked when cut)."""
    text = json.dumps(_compact(payload), ensure_ascii=False, default=str)
    return text if len(text) <= max_chars else text[:max_chars] + " …(truncated)"


def _schema_summary(kind: str, item: Mapping[str, Any]) -> str:
    """``t.c = 'v'`` for a value, ``column t.c: description``, ``table t: description``."""
    table, column = item.get("table"), item.get("column")
    if kind == "enum":
        value = item.get("value")
        return f"{table}.{column} = " + (f"'{value}'" if isinstance(value, str) else str(value))
    target = f"table {table}" if kind == "table" else f"column {table}.{column}"
    description = item.get("description")
    return f"{target}: {description}" if description else target


def _entry_name(entry: BaseUKF) -> str:
    res = entry.content_resources
    if entry.type == "column":
        return f"{res.get('table')}.{entry.name}"
    if entry.type == "enum":
        return _schema_summary("enum", res)
    return entry.name


def _entry_label(entry: BaseUKF) -> str:
    return f"{entry.type} {_entry_name(entry)}"


def _entry_row(entry: BaseUKF) -> dict[str, Any]:
    summary = entry.short_description or entry.description.split("\n", 1)[0]
    row: dict[str, Any] = {"type": entry.type, "name": _entry_name(entry)}
    if summary:
        row["description"] = summary[:160]
    return row


def _compact(value: Any) -> Any:
    """The payload without fields that only cost tokens; floats rounded."""
    if isinstance(value, dict):
        return {k: _compact(v) for k, v in value.items() if k not in _NOISE and v not in (None, "")}
    if isinstance(value, list):
        return [_compact(v) for v in value]
    return round(value, 4) if isinstance(value, float) else value


def _sig(parameters: Mapping[str, Any]) -> str:
    """``query: string, table?: string`` from a JSON schema's properties."""
    required = set(parameters.get("required", []))
    parts = []
    for name, prop in parameters.get("properties", {}).items():
        kinds = [p.get("type", "any") for p in prop.get("anyOf", [prop]) if p.get("type") != "null"]
        parts.append(f"{name}{'' if name in required else '?'}: {'|'.join(kinds) or 'any'}")
    return ", ".join(parts)
