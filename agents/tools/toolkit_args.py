"""Typed arguments of the agent tools (:mod:`agents.tools.toolkit`): their JSON schemas are
the tools'."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ToolArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DbInfoArgs(ToolArgs):
    pass


class TableInfoArgs(ToolArgs):
    table: str = Field(description="Table name, as listed by db_info.")


class ColumnInfoArgs(ToolArgs):
    table: str = Field(description="Table name.")
    column: str = Field(description="Column name within the table.")


class ExecuteSqlArgs(ToolArgs):
    sql: str = Field(description="One read-only SELECT (or WITH ... SELECT) statement.")
    max_rows: int = Field(50, ge=1, le=1000, description="At most this many rows come back.")


class FuzzyColumnArgs(ToolArgs):
    query: str = Field(description="Words describing the column, e.g. 'order date'.")
    table: str | None = Field(None, description="Only columns of this table.")
    k: int = Field(10, ge=1, le=50, description="Number of matches.")


class FuzzyEnumArgs(ToolArgs):
    query: str = Field(description="A value as the user wrote it, e.g. 'untied states'.")
    table: str | None = Field(None, description="Only values of this table.")
    column: str | None = Field(None, description="Only values of this column ('table.column').")
    k: int = Field(10, ge=1, le=50, description="Number of matches.")


TOOL_ARGS: dict[str, type[ToolArgs]] = {
    "db_info": DbInfoArgs,
    "table_info": TableInfoArgs,
    "column_info": ColumnInfoArgs,
    "execute_sql": ExecuteSqlArgs,
    "fuzzy_column": FuzzyColumnArgs,
    "fuzzy_enum": FuzzyEnumArgs,
}
