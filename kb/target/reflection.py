"""Schema reflection of a target database: tables, views, columns, keys and comments.

Plain frozen dataclasses built from SQLAlchemy's inspector (its ``get_multi_*`` calls, which
PostgreSQL answers with a handful of catalogue queries however wide the schema is).
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from sqlalchemy import Connection, inspect
from sqlalchemy.engine.interfaces import ReflectedColumn, ReflectedForeignKeyConstraint
from sqlalchemy.engine.reflection import ObjectKind
from sqlalchemy.exc import CompileError

logger = logging.getLogger(__name__)

TableKind = Literal["table", "view"]


@dataclass(frozen=True)
class ColumnInfo:
    """One column. ``type`` is the database's type name as text (``""`` when undeclared)."""

    name: str
    type: str
    nullable: bool = True
    default: str | None = None
    primary_key: bool = False
    comment: str | None = None


@dataclass(frozen=True)
class ForeignKeyInfo:
    """``columns`` of the owning table reference ``ref_columns`` of ``ref_table``."""

    columns: list[str]
    ref_table: str
    ref_columns: list[str]
    ref_schema: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class TableInfo:
    """One table or view with its columns (in declaration order) and keys."""

    name: str
    columns: list[ColumnInfo]
    primary_key: list[str] = field(default_factory=list)
    foreign_keys: list[ForeignKeyInfo] = field(default_factory=list)
    comment: str | None = None
    kind: TableKind = "table"
    schema: str | None = None

    def column(self, name: str) -> ColumnInfo:
        """The column called ``name`` (exact, else case-insensitive).

        Raises:
            KeyError: naming the column and the table.
        """
        for exact in (True, False):
            for col in self.columns:
                if col.name == name if exact else col.name.lower() == name.lower():
                    return col
        raise KeyError(f"table {self.name!r} has no column {name!r}")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


class UnknownTableError(KeyError):
    """No table or view of that name; the message suggests close names."""

    def __init__(self, name: str, known: Iterable[str]) -> None:
        close = difflib.get_close_matches(name, list(known), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        super().__init__(f"unknown table {name!r}{hint}")

    def __str__(self) -> str:
        return str(self.args[0])


def table_names(conn: Connection, schema: str | None = None) -> dict[str, TableKind]:
    """Names of the tables and views in ``schema`` (default schema when None), with their kind."""
    inspector = inspect(conn)
    names: dict[str, TableKind] = dict.fromkeys(inspector.get_table_names(schema), "table")
    names.update(dict.fromkeys(inspector.get_view_names(schema), "view"))
    return names


def reflect_tables(
    conn: Connection, kinds: dict[str, TableKind], schema: str | None = None
) -> dict[str, TableInfo]:
    """Reflect the tables and views named in ``kinds`` (from ``table_names``)."""
    if not kinds:
        return {}
    inspector = inspect(conn)
    names = list(kinds)
    multi: dict[str, Any] = {"schema": schema, "filter_names": names, "kind": ObjectKind.ANY}
    columns = inspector.get_multi_columns(**multi)
    pks = inspector.get_multi_pk_constraint(**multi)
    fks = inspector.get_multi_foreign_keys(**multi)
    comments = inspector.get_multi_table_comment(**multi) if conn.dialect.supports_comments else {}
    reflected = {}
    for key, cols in columns.items():
        name = key[1]  # keys are (schema, name)
        pk = pks.get(key)
        primary = list((pk.get("constrained_columns") if pk else None) or [])
        comment = comments.get(key)
        reflected[name] = TableInfo(
            name=name,
            columns=[_column(conn, col, col["name"] in primary) for col in cols],
            primary_key=primary,
            foreign_keys=[_foreign_key(fk) for fk in fks.get(key, [])],
            comment=comment.get("text") if comment else None,
            kind=kinds.get(name, "table"),
            schema=schema,
        )
    return {name: reflected[name] for name in names if name in reflected}


def _column(conn: Connection, col: ReflectedColumn, primary: bool) -> ColumnInfo:
    return ColumnInfo(
        name=col["name"],
        type=_type_name(conn, col["type"]),
        nullable=bool(col.get("nullable", True)),
        default=None if col.get("default") is None else str(col["default"]),
        primary_key=primary,
        comment=col.get("comment"),
    )


def _type_name(conn: Connection, type_: Any) -> str:
    try:
        return str(type_.compile(dialect=conn.dialect))
    except (CompileError, NotImplementedError):
        return "" if type(type_).__name__ == "NullType" else str(type_)


def _foreign_key(fk: ReflectedForeignKeyConstraint) -> ForeignKeyInfo:
    return ForeignKeyInfo(
        columns=list(fk["constrained_columns"]),
        ref_table=fk["referred_table"],
        ref_columns=list(fk["referred_columns"]),
        ref_schema=fk.get("referred_schema"),
        name=fk.get("name"),
    )
