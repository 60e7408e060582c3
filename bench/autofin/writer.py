"""Writes the tables to a SQLite file (byte-reproducible) and loads them into PostgreSQL (COPY).

SQLite: the file is created from scratch, tables and rows are inserted in a fixed order in one
transaction without a journal, and indexes are built afterwards, so the same tables give the
same bytes. PostgreSQL: every table is dropped and recreated, filled with ``COPY ... FROM STDIN``
in text format (floats written with ``repr``, which round-trips exactly), indexed and analysed.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import closing
from pathlib import Path

import psycopg
from sqlalchemy.engine import make_url
from tqdm import tqdm

from bench.autofin.schema import Table, create_index_sql, create_table_sql

logger = logging.getLogger(__name__)
COPY_CHUNK_ROWS = 20_000


def write_sqlite(tables: Iterable[Table], path: Path | str, *, progress: bool = True) -> Path:
    """Creates ``path`` (replacing it) with every table and its indexes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    tables = list(tables)
    with closing(sqlite3.connect(path, isolation_level=None)) as connection:
        connection.execute("PRAGMA journal_mode = OFF")
        connection.execute("PRAGMA synchronous = OFF")
        connection.execute("BEGIN")
        for table in tqdm(tables, desc="sqlite", disable=not progress):
            connection.execute(create_table_sql(table.spec, "sqlite"))
            marks = ", ".join("?" for _ in table.columns)
            connection.executemany(
                f"INSERT INTO {table.name} VALUES ({marks})", zip(*table.columns, strict=True)
            )
        for table in tables:
            for statement in create_index_sql(table.spec):
                connection.execute(statement)
        connection.execute("COMMIT")
    logger.info("wrote %s (%.1f MB)", path, path.stat().st_size / 1e6)
    return path


def psycopg_conninfo(url: str) -> str:
    """A libpq connection string for a SQLAlchemy PostgreSQL URL (any driver suffix)."""
    parsed = make_url(url).set(drivername="postgresql")
    return parsed.render_as_string(hide_password=False)


def load_postgres(tables: Iterable[Table], url: str, *, progress: bool = True) -> None:
    """(Re)creates every table in the PostgreSQL database at ``url`` and fills it with COPY."""
    tables = list(tables)
    with psycopg.connect(psycopg_conninfo(url)) as connection:
        with connection.cursor() as cursor:
            for table in tqdm(tables, desc="postgresql", disable=not progress):
                cursor.execute(f"DROP TABLE IF EXISTS {table.name}")
                cursor.execute(create_table_sql(table.spec, "postgresql"))
                columns = ", ".join(table.spec.column_names)
                with cursor.copy(f"COPY {table.name} ({columns}) FROM STDIN (FREEZE)") as copy:
                    for chunk in _copy_chunks(table):
                        copy.write(chunk)
                for statement in create_index_sql(table.spec):
                    cursor.execute(statement)
        connection.commit()
        connection.autocommit = True
        connection.execute("ANALYZE")
    logger.info("loaded %d tables into PostgreSQL", len(tables))


def _copy_chunks(table: Table) -> Iterator[str]:
    """The table in COPY text format, ``COPY_CHUNK_ROWS`` rows at a time."""
    texts = [
        _as_text(column.type, values)
        for column, values in zip(table.spec.columns, table.columns, strict=True)
    ]
    lines = list(map("\t".join, zip(*texts, strict=True)))
    for start in range(0, len(lines), COPY_CHUNK_ROWS):
        yield "\n".join(lines[start : start + COPY_CHUNK_ROWS]) + "\n"


def _as_text(kind: str, values: list) -> list[str]:
    """Column values as COPY text (``\\N`` for NULL; ``repr`` round-trips floats exactly)."""
    if kind == "text":
        for value in set(values) - {None}:
            if any(ch in value for ch in "\t\n\r\\"):
                raise ValueError(f"text value {value!r} needs COPY escaping")
    convert = {"real": repr, "int": str}.get(kind, str)
    if None in values:
        return [r"\N" if v is None else convert(v) for v in values]
    return values if kind == "text" else list(map(convert, values))
