"""LLM-augmented descriptions and synonyms for profiled schema (RubikSQL §4.2.1).

:class:`LLMDescriber` implements :class:`kb.profile.model.Describer`: for a table, a column
or an enum value it asks the model for a short business description and 2-5 synonyms a
business user might say (column ``cust_nm`` → "customer name", ``["client name",
"customer"]``)::

    describer = LLMDescriber(LlamaCppLLM(path))
    profile_database(database, store, database_name="shop", describer=describer)

Economy on a small CPU: one call describes a table together with its first ``batch`` columns,
and the answers for those columns are kept so that ``describe_column`` is served without
another call. A column that was not in such a call is asked with the next ``batch`` columns
of its table; enum values are asked ``enum_batch`` values of one column at a time. An item
that the model left out of its batch answer (or whose batch failed) gets one call of its own.

Answers are JSON constrained by a schema (lengths and counts capped in the schema itself),
then validated and cleaned: whitespace folded, descriptions trimmed on a word boundary,
synonyms deduplicated case-insensitively, synonyms equal to the name (in any spelling:
``cust_nm``, ``cust nm``, ``Cust-Nm``) dropped, overlong ones dropped, the count capped.
Anything unusable raises :class:`DescriberError` with the raw output; the profiler logs it and
goes on (``kb.profile.entries``). A call stopped by the current
:class:`~agents.llm.base.Cancellation` raises :class:`DescribingCancelled` instead, which stops
the whole profiling run (a :class:`~kb.profile.model.StopProfiling`).

Prompts: ``agents/learn/prompts/describe_system.j2``, ``describe_table.j2``, ``describe_columns.j2``
and ``describe_enums.j2``.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agents.llm.base import LLM, LLMCancelledError, LLMOutputError, Message
from agents.templates import render
from kb.profile.model import ColumnProfile, Description, StopProfiling, TableProfile

log = logging.getLogger(__name__)

MAX_DESCRIPTION_CHARS = 200
MIN_SENTENCE_CHARS = 20  # a cut description ends at its last sentence when one is this long
MAX_SYNONYM_CHARS = 48
MAX_SYNONYM_WORDS = 6
MAX_EXAMPLE_CHARS = 40
EXAMPLES_SHOWN = 3
_SEPARATORS = re.compile(r"[\s_\-./]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


class DescriberError(ValueError):
    """The model's answer about ``subject`` is unusable; ``raw`` holds it."""

    def __init__(self, subject: str, problem: str, raw: str) -> None:
        super().__init__(f"describing {subject}: {problem}; model output: {raw[:300]!r}")
        self.subject, self.raw = subject, raw


class DescribingCancelled(StopProfiling):
    """The model call describing ``subject`` was cancelled: profiling stops, writing nothing."""

    def __init__(self, subject: str, reason: str) -> None:
        super().__init__(f"describing {subject}: {reason}")
        self.subject = subject


# ------------------------------------------------------------------ answer models
class _Item(BaseModel):
    description: str
    synonyms: list[str]


class _ColumnItem(_Item):
    name: str


class _ValueItem(_Item):
    value: str


class _TableAnswer(_Item):
    columns: list[_ColumnItem]


class _ColumnsAnswer(BaseModel):
    columns: list[_ColumnItem]


class _ValuesAnswer(BaseModel):
    values: list[_ValueItem]


_Answer = TypeVar("_Answer", bound=BaseModel)


def _item_schema(key: str | None, max_synonyms: int) -> dict[str, Any]:
    properties: dict[str, Any] = {} if key is None else {key: {"type": "string"}}
    properties["description"] = {
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_DESCRIPTION_CHARS,
    }
    properties["synonyms"] = {
        "type": "array",
        "items": {"type": "string", "maxLength": MAX_SYNONYM_CHARS},
        "minItems": 1,
        "maxItems": max_synonyms,
    }
    return {"type": "object", "properties": properties, "required": list(properties)}


def _list_schema(field: str, key: str, count: int, max_synonyms: int) -> dict[str, Any]:
    items = {"type": "array", "items": _item_schema(key, max_synonyms), "maxItems": count}
    return {"type": "object", "properties": {field: items}, "required": [field]}


def _table_schema(columns: int, max_synonyms: int) -> dict[str, Any]:
    schema = _item_schema(None, max_synonyms)
    schema["properties"]["columns"] = _list_schema("columns", "name", columns, max_synonyms)[
        "properties"
    ]["columns"]
    schema["required"].append("columns")
    return schema


# ----------------------------------------------------------------------- cleaning
def fold(text: str) -> str:
    """Case- and separator-insensitive form: ``CustNm``, ``cust_nm``, ``Cust-NM`` → ``cust nm``."""
    return " ".join(_SEPARATORS.sub(" ", _CAMEL.sub(" ", text)).split()).casefold()


def clean_description(text: str) -> str:
    """Whitespace folded; a text at the length cap (cut by the schema mid-word, likely) ends
    at its last full sentence, else at a word boundary with an ellipsis."""
    text = " ".join(text.split())
    if len(text) < MAX_DESCRIPTION_CHARS:
        return text
    text = text[:MAX_DESCRIPTION_CHARS]
    sentence = text.rfind(". ")
    if sentence >= MIN_SENTENCE_CHARS:
        return text[: sentence + 1]
    return text.rsplit(" ", 1)[0].rstrip(" ,;:") + "…"


def clean_synonyms(
    name: str, synonyms: Sequence[str], limit: int, exclude: Sequence[str] = ()
) -> tuple[str, ...]:
    """Distinct synonyms (case/separator-insensitive), neither the name nor one of
    ``exclude`` (a table's column names), not overlong, at most ``limit``."""
    seen = {fold(name), name.casefold().strip(), *map(fold, exclude)}
    kept: list[str] = []
    for raw in synonyms:
        synonym = " ".join(str(raw).split()).strip(" .,;:'\"`")
        key = fold(synonym)
        too_long = len(synonym) > MAX_SYNONYM_CHARS or len(synonym.split()) > MAX_SYNONYM_WORDS
        if not key or too_long or key in seen:
            continue
        seen.add(key)
        kept.append(synonym)
    return tuple(kept[:limit])


# ------------------------------------------------------------------------ prompts
def _examples(values: Sequence[Any]) -> list[str]:
    shown = []
    for value in values[:EXAMPLES_SHOWN]:
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        shown.append(text if len(text) <= MAX_EXAMPLE_CHARS else text[:MAX_EXAMPLE_CHARS] + "…")
    return shown


def _column_view(column: ColumnProfile) -> dict[str, Any]:
    return {
        "name": column.name,
        "data_type": column.data_type,
        "semantic_type": column.semantic_type,
        "comment": column.comment or "",
        "examples": _examples(column.examples),
        "references": [f"{r['table']}.{r['column']}" for r in column.references],
    }


def _value_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


# ---------------------------------------------------------------------- describer
class LLMDescriber:
    """A :class:`~kb.profile.model.Describer` backed by an LLM (JSON-schema answers).

    Not thread-safe: one profiling run at a time per describer.

    Args:
        llm: The model.
        max_tokens: Completion tokens per call (a batch of ``batch`` items must fit).
        timeout: Seconds per call (None: no limit).
        batch: Columns described by one call.
        enum_batch: Enum values of one column described by one call.
        max_synonyms: Synonyms kept per item (the schema asks for at most this many).
        enum_max_values: Values of a column with more enum values than this are not described
            (an empty :class:`Description`: nothing to add): long lists of names or codes cost
            many calls and their values are found by spelling anyway.
    """

    def __init__(
        self,
        llm: LLM,
        *,
        max_tokens: int = 1024,
        timeout: float | None = 180.0,
        batch: int = 8,
        enum_batch: int = 16,
        max_synonyms: int = 5,
        enum_max_values: int = 30,
    ) -> None:
        if batch < 1 or enum_batch < 1 or max_synonyms < 1:
            raise ValueError("batch, enum_batch and max_synonyms must be at least 1")
        self.llm, self.max_tokens, self.timeout = llm, max_tokens, timeout
        self.batch, self.enum_batch, self.max_synonyms = batch, enum_batch, max_synonyms
        self.enum_max_values = enum_max_values
        self.calls = 0
        self._columns: dict[tuple[str, str], Description] = {}
        self._values: dict[tuple[str, str, str], Description] = {}
        self._asked: set[tuple[str, ...]] = set()

    # ------------------------------------------------------------ the protocol
    def describe_table(self, table: TableProfile) -> Description:
        """Describe ``table``; its first ``batch`` columns are described by the same call."""
        todo = [c for c in table.columns if (table.name, c.name) not in self._asked]
        columns = todo[: self.batch]
        prompt = render(
            "describe_table.j2",
            table=table.name,
            kind=table.kind,
            comment=table.comment or "",
            row_count=table.row_count,
            column_count=len(table.columns),
            columns=[_column_view(c) for c in columns],
        )
        subject = f"table {table.name!r}"
        raw = self._ask(prompt, _table_schema(len(columns), self.max_synonyms), subject)
        answer = _parse(_TableAnswer, raw, subject)
        self._asked.update((table.name, c.name) for c in columns)
        self._keep_columns(table, answer.columns)
        columns_named = [c.name for c in table.columns]  # small models list them as synonyms
        return self._description(subject, table.name, answer, raw, exclude=columns_named)

    def describe_column(self, table: TableProfile, column: ColumnProfile) -> Description:
        """Describe one column, from an earlier batch answer when there is one."""
        key = (table.name, column.name)
        if key not in self._columns and key not in self._asked:
            start = table.columns.index(column) + 1 if column in table.columns else 0
            later = [c for c in table.columns[start:] if (table.name, c.name) not in self._asked]
            self._try_batch(lambda: self._ask_columns(table, [column, *later][: self.batch]), key)
        if key in self._columns:
            return self._columns[key]
        raw = self._ask_columns(table, [column])
        if key not in self._columns:
            raise DescriberError(f"column {table.name}.{column.name}", "no usable answer", raw)
        return self._columns[key]

    def describe_enum(self, table: TableProfile, column: ColumnProfile, value: Any) -> Description:
        """Describe one value of a categorical column, batched with the column's next values."""
        text = _value_text(value)
        key = (table.name, column.name, text)
        if len(column.enum_values or ()) > self.enum_max_values:
            if (table.name, column.name, "") not in self._asked:
                self._asked.add((table.name, column.name, ""))
                log.info(
                    "describer: not describing the %d values of %s.%s (limit %d)",
                    len(column.enum_values or ()),
                    table.name,
                    column.name,
                    self.enum_max_values,
                )
            return Description()
        if key not in self._values and key not in self._asked:
            values = [_value_text(v) for v, _count, _share in column.enum_values or []]
            start = values.index(text) + 1 if text in values else len(values)
            later = [v for v in values[start:] if (table.name, column.name, v) not in self._asked]
            batch = [text, *later][: self.enum_batch]
            self._try_batch(lambda: self._ask_values(table, column, batch), key)
        if key in self._values:
            return self._values[key]
        raw = self._ask_values(table, column, [text])
        if key not in self._values:
            raise DescriberError(
                f"value {text!r} of {table.name}.{column.name}", "no usable answer", raw
            )
        return self._values[key]

    # --------------------------------------------------------------- batches
    def _ask_columns(self, table: TableProfile, columns: list[ColumnProfile]) -> str:
        self._asked.update((table.name, c.name) for c in columns)
        prompt = render(
            "describe_columns.j2",
            table=table.name,
            comment=table.comment or "",
            columns=[_column_view(c) for c in columns],
        )
        subject = f"columns {', '.join(c.name for c in columns)} of {table.name!r}"
        schema = _list_schema("columns", "name", len(columns), self.max_synonyms)
        raw = self._ask(prompt, schema, subject)
        self._keep_columns(table, _parse(_ColumnsAnswer, raw, subject).columns)
        return raw

    def _ask_values(self, table: TableProfile, column: ColumnProfile, values: list[str]) -> str:
        self._asked.update((table.name, column.name, v) for v in values)
        known = self._columns.get((table.name, column.name))
        prompt = render(
            "describe_enums.j2",
            table=table.name,
            column=_column_view(column),
            column_description=known.description if known else "",
            values=values,
        )
        subject = f"values of {table.name}.{column.name}"
        schema = _list_schema("values", "value", len(values), self.max_synonyms)
        raw = self._ask(prompt, schema, subject)
        wanted = {v.casefold().strip(): v for v in values}
        for item in _parse(_ValuesAnswer, raw, subject).values:
            value = wanted.get(item.value.casefold().strip())
            if value is None:
                log.debug("describer: ignoring unasked value %r of %s", item.value, subject)
                continue
            found = self._usable(f"value {value!r} of {table.name}.{column.name}", value, item)
            if found is not None:
                self._values[(table.name, column.name, value)] = found
        return raw

    def _keep_columns(self, table: TableProfile, items: list[_ColumnItem]) -> None:
        names = {c.name.casefold(): c.name for c in table.columns}
        for item in items:
            name = names.get(item.name.strip().casefold())
            if name is None:
                log.debug("describer: ignoring unknown column %r of %s", item.name, table.name)
                continue
            found = self._usable(f"column {table.name}.{name}", name, item)
            if found is not None:
                self._columns[(table.name, name)] = found

    def _try_batch(self, ask: Callable[[], object], key: tuple[str, ...]) -> None:
        try:
            ask()
        except DescriberError as exc:
            log.warning("describer: batch answer unusable, asking %s alone: %s", key, exc)

    # -------------------------------------------------------------- one call
    def _ask(self, prompt: str, schema: dict[str, Any], subject: str) -> str:
        messages: list[Message] = [
            {"role": "system", "content": render("describe_system.j2")},
            {"role": "user", "content": prompt},
        ]
        self.calls += 1
        try:
            result = self.llm.chat(
                messages, max_tokens=self.max_tokens, json_schema=schema, timeout=self.timeout
            )
        except LLMOutputError as exc:
            raise DescriberError(subject, "the answer is not JSON", exc.raw) from exc
        except LLMCancelledError as exc:
            raise DescribingCancelled(subject, str(exc)) from exc
        return result.text

    def _description(
        self, subject: str, name: str, item: _Item, raw: str, exclude: Sequence[str] = ()
    ) -> Description:
        found = self._usable(subject, name, item, exclude)
        if found is None:
            raise DescriberError(subject, "empty description", raw)
        return found

    def _usable(
        self, subject: str, name: str, item: _Item, exclude: Sequence[str] = ()
    ) -> Description | None:
        """The cleaned answer about one item, or None (logged) when it has no description."""
        description = clean_description(item.description)
        if not description:
            log.debug("describer: empty description for %s", subject)
            return None
        synonyms = clean_synonyms(name, item.synonyms, self.max_synonyms, exclude)
        return Description(description, synonyms)


def _parse(model: type[_Answer], raw: str, subject: str) -> _Answer:
    text = raw.strip().removeprefix("```json").removeprefix("```").removesuffix("```")
    try:
        return model.model_validate_json(text)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'answer'}: {e['msg']}" for e in exc.errors()[:3]
        )
        raise DescriberError(subject, problems, raw) from None
