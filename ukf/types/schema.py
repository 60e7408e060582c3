"""Schema knowledge: tables, columns and enumerated column values.

Constructors fill the tags (``[DATABASE:..]``, ``[TABLE:..]``, ``[COLUMN:..]``, ``[ENUM:..]``)
and the structural relations: ``column_of`` (column → table), ``value_of`` (enum → column) and
``joins`` (table → table, one per foreign key, with the column pairs as resources). Columns and
enums inherit their parent's provenance, so the whole schema of one database shares a scope.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from ukf.base import BaseUKF

SCHEMA_COLLECTION = "schema"
_INHERITED = ("source", "creator", "owner", "workspace", "collection")


class ForeignKey(BaseModel):
    """``columns`` of this table reference ``ref_columns`` of ``ref_table``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    columns: tuple[str, ...]
    ref_table: str
    ref_columns: tuple[str, ...]


def _inherit(parent: BaseUKF, fields: dict[str, Any]) -> dict[str, Any]:
    for name in _INHERITED:
        fields.setdefault(name, getattr(parent, name))
    return fields


class TableUKF(BaseUKF):
    """A table of a target database."""

    type: Literal["table"] = "table"
    default_composer: ClassVar[str] = "table"

    @classmethod
    def create(
        cls,
        database: str,
        table: str,
        *,
        columns: list[str] | None = None,
        primary_key: list[str] | None = None,
        foreign_keys: list[ForeignKey] | None = None,
        row_count: int | None = None,
        comment: str | None = None,
        **fields: Any,
    ) -> TableUKF:
        fks = [ForeignKey.model_validate(fk) for fk in foreign_keys or []]
        fields["content_resources"] = {
            "database": database,
            "table": table,
            "columns": list(columns or []),
            "primary_key": list(primary_key or []),
            "foreign_keys": [fk.model_dump(mode="json") for fk in fks],
            "row_count": row_count,
            "comment": comment,
            **fields.get("content_resources", {}),
        }
        fields["tags"] = cls.make_tags(
            [("DATABASE", database), ("TABLE", table)], fields.get("tags", ())
        )
        fields.setdefault("source", "system")
        fields.setdefault("collection", SCHEMA_COLLECTION)
        fields.setdefault("description", comment or "")
        entry = cls(name=table, **fields)
        for fk in fks:
            target = entry.sibling_id(fk.ref_table)
            entry.relate(
                "joins", target, columns=list(fk.columns), ref_columns=list(fk.ref_columns)
            )
        return entry

    def sibling_id(self, table: str) -> str:
        """The id another table of the same database gets with this table's provenance."""
        return TableUKF.create(
            self.database, table, **{name: getattr(self, name) for name in _INHERITED}
        ).id

    @property
    def database(self) -> str:
        return self.content_resources["database"]

    @property
    def columns(self) -> list[str]:
        return list(self.content_resources.get("columns", []))

    @property
    def foreign_keys(self) -> list[ForeignKey]:
        return [ForeignKey.model_validate(fk) for fk in self.content_resources["foreign_keys"]]


class ColumnUKF(BaseUKF):
    """A column; ``content_resources`` holds its type, statistics and example values."""

    type: Literal["column"] = "column"
    default_composer: ClassVar[str] = "column"

    @classmethod
    def create(
        cls,
        table: TableUKF,
        column: str,
        *,
        data_type: str = "",
        semantic_type: str | None = None,
        nullable: bool = True,
        primary_key: bool = False,
        examples: list[Any] | None = None,
        statistics: dict[str, Any] | None = None,
        comment: str | None = None,
        **fields: Any,
    ) -> ColumnUKF:
        fields["content_resources"] = {
            "database": table.database,
            "table": table.name,
            "column": column,
            "data_type": data_type,
            "semantic_type": semantic_type,
            "nullable": nullable,
            "primary_key": primary_key,
            "examples": list(examples or []),
            "statistics": dict(statistics or {}),
            "comment": comment,
            **fields.get("content_resources", {}),
        }
        fields["tags"] = cls.make_tags(
            [("DATABASE", table.database), ("TABLE", table.name), ("COLUMN", column)],
            fields.get("tags", ()),
        )
        fields.setdefault("description", comment or "")
        entry = cls(name=column, **_inherit(table, fields))
        entry.relate("column_of", table.id)
        return entry

    @property
    def database(self) -> str:
        return self.content_resources["database"]

    @property
    def table(self) -> str:
        return self.content_resources["table"]

    @property
    def qualified_name(self) -> str:
        return f"{self.table}.{self.name}"


class EnumUKF(BaseUKF):
    """One value of a categorical column, with its count and synonyms."""

    type: Literal["enum"] = "enum"
    default_composer: ClassVar[str] = "enum"

    @classmethod
    def create(
        cls,
        column: ColumnUKF,
        value: Any,
        *,
        count: int | None = None,
        frequency: float | None = None,
        **fields: Any,
    ) -> EnumUKF:
        fields["content_resources"] = {
            "database": column.database,
            "table": column.table,
            "column": column.name,
            "value": value,
            "count": count,
            "frequency": frequency,
            **fields.get("content_resources", {}),
        }
        fields["tags"] = cls.make_tags(
            [
                ("DATABASE", column.database),
                ("TABLE", column.table),
                ("COLUMN", column.name),
                ("ENUM", value),
            ],
            fields.get("tags", ()),
        )
        name = str(value) if str(value).strip() else "(blank)"
        entry = cls(name=name, **_inherit(column, fields))
        entry.relate("value_of", column.id)
        return entry

    @property
    def value(self) -> Any:
        return self.content_resources.get("value")
