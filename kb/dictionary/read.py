"""Reading data dictionaries: CSV, JSON, YAML and Spider's ``tables.json``.

Every format becomes a list of :class:`DictionaryRecord` (a table or a column, its
description and synonyms, and where in the file it was), held by a :class:`DataDictionary`
with the file's name and content hash::

    dictionary = read_dictionary(Path("school_finance.csv"))
    dictionary.records[0]  # DictionaryRecord(table="finrev_fed_17", column="c14", ...)

Formats, chosen by the file's extension (``.csv``/``.tsv``, ``.json``, ``.yaml``/``.yml``):

- **CSV**: one row per table or column; header names are matched case-insensitively:
  ``table``/``table_name``, ``column``/``column_name``/``field`` (empty: the row describes
  the table), ``description``/``desc``/``comment``/``definition``,
  ``synonyms``/``aliases`` (separated by ``;`` or ``|``) and ``database``/``db``/``db_id``.
- **JSON / YAML**: a list of such records (objects with the same keys), or a mapping
  ``{table: {description, synonyms, columns: {column: description | {description,
  synonyms}}}}``, optionally wrapped as ``{database: NAME, tables: {...}}``.
- **Spider** ``tables.json`` (a JSON list of databases with ``db_id``,
  ``column_names_original``): each natural-language name in ``table_names`` /
  ``column_names`` describes the table or column beside it in ``*_original``.

Refused, with :class:`DictionaryError` naming the file (and the line or record): an
unreadable, empty, oversized (``max_bytes``, checked before reading) or binary file, an
unknown extension, malformed content, a record without a table or without a description
or synonyms.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kb.file_bytes import read_capped

MAX_DICTIONARY_BYTES = 20 * 1024 * 1024
MAX_RECORDS = 200_000
FORMATS = {".csv": "csv", ".tsv": "csv", ".json": "json", ".yaml": "yaml", ".yml": "yaml"}
HEADERS = {
    "table": ("table", "table_name", "tablename", "table name"),
    "column": ("column", "column_name", "columnname", "column name", "field", "field_name"),
    "description": ("description", "desc", "comment", "definition", "meaning"),
    "synonyms": ("synonyms", "aliases", "alias", "synonym"),
    "database": ("database", "db", "db_id", "database_name"),
}
_SYNONYM_SEPARATORS = (";", "|")


class DictionaryError(ValueError):
    """A data dictionary that cannot be used; the message names the file (and the place)."""


@dataclass(frozen=True)
class DictionaryRecord:
    """What a dictionary says about one table (``column`` None) or one column."""

    table: str
    column: str | None
    description: str
    synonyms: tuple[str, ...]
    where: str
    """Its place in the file: ``line 4``, ``record 2``, ``database flight_2, column 3``."""
    database: str | None = None

    @property
    def subject(self) -> str:
        return self.table if self.column is None else f"{self.table}.{self.column}"


@dataclass(frozen=True)
class DataDictionary:
    """The records of one dictionary file, with the file's name and content hash."""

    name: str
    sha256: str
    format: str
    records: tuple[DictionaryRecord, ...]

    def databases(self) -> list[str | None]:
        """The databases its records name (None for records that name none)."""
        return list(dict.fromkeys(r.database for r in self.records))


def read_dictionary(path: Path, *, max_bytes: int = MAX_DICTIONARY_BYTES) -> DataDictionary:
    """Read and validate the dictionary at ``path`` (see the module docstring)."""
    kind = FORMATS.get(path.suffix.lower())
    if kind is None:
        known = ", ".join(sorted(FORMATS))
        raise DictionaryError(f"{path}: unknown data dictionary format (expected one of {known})")
    data = read_capped(path, max_bytes, "data dictionary limit", DictionaryError)
    text = _text(path, data)
    records = _parse(path, kind, text)
    if not records:
        raise DictionaryError(f"{path}: no table or column descriptions in it")
    return DataDictionary(path.name, hashlib.sha256(data).hexdigest(), kind, tuple(records))


def _text(path: Path, data: bytes) -> str:
    if not data.strip():
        raise DictionaryError(f"{path}: the file is empty")
    if b"\x00" in data[:65536]:
        raise DictionaryError(f"{path}: binary content, not a text data dictionary")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DictionaryError(
            f"{path}: not UTF-8 text (byte {exc.start}); a data dictionary must be UTF-8"
        ) from None


def _parse(path: Path, kind: str, text: str) -> list[DictionaryRecord]:
    if kind == "csv":
        return list(_capped(path, _csv_records(path, text)))
    try:
        data = json.loads(text) if kind == "json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise DictionaryError(f"{path}: not valid {kind.upper()}: {exc}") from None
    if _is_spider(data):
        return list(_capped(path, _spider_records(path, data)))
    return list(_capped(path, _structured_records(path, data)))


def _capped(path: Path, records: Iterator[DictionaryRecord]) -> Iterator[DictionaryRecord]:
    for count, record in enumerate(records, 1):
        if count > MAX_RECORDS:
            raise DictionaryError(f"{path}: more than {MAX_RECORDS:,} records")
        yield record


# ----------------------------------------------------------------------------- CSV
def _csv_records(path: Path, text: str) -> Iterator[DictionaryRecord]:
    delimiter = "\t" if path.suffix.lower() == ".tsv" else _sniff_delimiter(text)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    header = next(reader, None) or []
    fields = _header_fields(path, header)
    for row in reader:
        line = reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        raw = {key: row[index] if index < len(row) else "" for key, index in fields.items()}
        yield _record(path, raw, f"line {line}")


def _sniff_delimiter(text: str) -> str:
    first = text.lstrip("\ufeff").split("\n", 1)[0]
    return max((",", ";", "\t"), key=first.count)


def _header_fields(path: Path, header: list[str]) -> dict[str, int]:
    names = [cell.strip().casefold() for cell in header]
    fields: dict[str, int] = {}
    for key, aliases in HEADERS.items():
        found = [index for index, name in enumerate(names) if name in aliases]
        if found:
            fields[key] = found[0]
    if "table" not in fields or not {"description", "synonyms"} & set(fields):
        raise DictionaryError(
            f"{path}: line 1: the header {header!r} needs a table column (table, table_name) "
            "and a description (description, desc, comment, definition) or synonyms column"
        )
    return fields


# ------------------------------------------------------------------- JSON and YAML
def _structured_records(path: Path, data: Any) -> Iterator[DictionaryRecord]:
    if isinstance(data, list):
        for number, item in enumerate(data, 1):
            if not isinstance(item, Mapping):
                raise DictionaryError(f"{path}: record {number}: expected an object")
            raw = {_canonical(str(k)): v for k, v in item.items()}
            yield _record(path, raw, f"record {number}")
        return
    if not isinstance(data, Mapping):
        raise DictionaryError(f"{path}: expected a list of records or a mapping of tables")
    database = data.get("database") if isinstance(data.get("tables"), Mapping) else None
    tables = data["tables"] if database is not None else data
    for table, about in tables.items():
        yield from _table_records(path, str(table), about, database)


def _table_records(path: Path, table: str, about: Any, database: Any) -> Iterator[DictionaryRecord]:
    where = f"table {table!r}"
    db = str(database) if database is not None else None
    if isinstance(about, str):
        yield _record(path, {"table": table, "description": about, "database": db}, where)
        return
    if not isinstance(about, Mapping):
        raise DictionaryError(f"{path}: {where}: expected a description or an object")
    fields = {_canonical(str(k)): v for k, v in about.items() if k != "columns"}
    if fields.get("description") or fields.get("synonyms"):
        yield _record(path, {**fields, "table": table, "database": db}, where)
    columns = about.get("columns") or {}
    if not isinstance(columns, Mapping):
        raise DictionaryError(f"{path}: {where}: 'columns' must map column names to descriptions")
    for column, text in columns.items():
        place = f"column {table}.{column}"
        if isinstance(text, Mapping):
            fields = {_canonical(str(k)): v for k, v in text.items()}
        else:
            fields = {"description": text}
        yield _record(path, {**fields, "table": table, "column": column, "database": db}, place)


def _canonical(key: str) -> str:
    folded = key.strip().casefold()
    for canonical, aliases in HEADERS.items():
        if folded in aliases:
            return canonical
    return folded


# -------------------------------------------------------------------------- Spider
def _is_spider(data: Any) -> bool:
    return (
        isinstance(data, list)
        and bool(data)
        and all(isinstance(d, Mapping) and "column_names_original" in d for d in data)
    )


def _spider_records(path: Path, data: list[Mapping[str, Any]]) -> Iterator[DictionaryRecord]:
    for number, db in enumerate(data, 1):
        try:
            database = str(db["db_id"])
            tables = list(zip(db["table_names_original"], db["table_names"], strict=True))
            columns = list(zip(db["column_names_original"], db["column_names"], strict=True))
        except (KeyError, TypeError, ValueError) as exc:
            raise DictionaryError(
                f"{path}: database record {number}: not a Spider schema ({exc})"
            ) from None
        for index, (original, natural) in enumerate(tables):
            where = f"database {database}, table {index}"
            yield _record(
                path, {"table": original, "description": natural, "database": database}, where
            )
        for index, ((table_index, original), (_, natural)) in enumerate(columns):
            if table_index < 0:  # the "*" column
                continue
            if not 0 <= table_index < len(tables):
                raise DictionaryError(
                    f"{path}: database {database}, column {index}: no table {table_index}"
                )
            where = f"database {database}, column {index}"
            raw = {
                "table": tables[table_index][0],
                "column": original,
                "description": natural,
                "database": database,
            }
            yield _record(path, raw, where)


# ------------------------------------------------------------------------- records
def _record(path: Path, raw: Mapping[str, Any], where: str) -> DictionaryRecord:
    table = _text_field(raw.get("table"))
    column = _text_field(raw.get("column")) or None
    description = " ".join(_text_field(raw.get("description")).split())
    synonyms = _synonyms(raw.get("synonyms"))
    if not table:
        raise DictionaryError(f"{path}: {where}: no table named")
    if not description and not synonyms:
        subject = table if column is None else f"{table}.{column}"
        raise DictionaryError(f"{path}: {where}: no description or synonyms for {subject}")
    database = _text_field(raw.get("database")) or None
    return DictionaryRecord(table, column, description, synonyms, where, database)


def _text_field(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (Mapping, list)):
        return ""
    return str(value).strip()


def _synonyms(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    items: list[Any]
    if isinstance(value, str):
        items = [value]
        for separator in _SYNONYM_SEPARATORS:
            items = [part for item in items for part in str(item).split(separator)]
    elif isinstance(value, list):
        items = value
    else:
        items = [value]
    cleaned = (" ".join(str(item).split()) for item in items if item is not None)
    return tuple(dict.fromkeys(s for s in cleaned if s))
