"""Table / Column / Enum UKF from table profiles.

Identity is only ``database / table / column / value`` (the constructors' tags) plus the
profiler's provenance (``source="system"``, ``creator="profiler"``). Everything that can
change between two profiles — statistics, semantic type, examples, counts — lives in
``content_resources``, so it changes the ``content_hash`` but never the id. A column whose
declared type changed gets a new ``version`` (and so a new id, its enums too); the old one
is invalidated by ``kb.profile.sync``.

Synonyms: names get their folded form (``CountryCode`` → ``country code``), enum values their
lower-cased and whitespace/underscore/hyphen-folded forms when those differ from the value.
A ``Describer`` fills descriptions and more synonyms for entries that have no description
(neither a database comment nor one already in the store).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any, Protocol

from kb.profile.model import ColumnProfile, Describer, Description, StopProfiling, TableProfile
from ukf import BaseUKF
from ukf.types.schema import ColumnUKF, EnumUKF, ForeignKey, TableUKF

logger = logging.getLogger(__name__)

PROFILER = "profiler"
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[\s_\-]+")
MIN_SYNONYM_LENGTH = 2


class VersionSource(Protocol):
    """What the builder needs to know about entries already in the store."""

    def column_version(self, table: str, column: str, data_type: str) -> tuple[str, list[str]]:
        """``(version, parents)`` for a column with this declared type."""
        ...

    def has_description(self, entry: BaseUKF) -> bool:
        """Whether the stored entry with this id already has a description."""
        ...


def name_variants(name: str) -> list[str]:
    """The folded form of a table or column name when it differs from the lower-cased name."""
    folded = " ".join(_SEPARATORS.sub(" ", _CAMEL.sub(" ", name)).split()).lower()
    return [folded] if folded and folded != name.lower() else []


def value_variants(value: Any) -> list[str]:
    """Lower-cased and separator-folded forms of a string value that differ from it."""
    if not isinstance(value, str):
        return []
    lower = value.strip().lower()
    folded = " ".join(_SEPARATORS.sub(" ", value).split())
    variants = dict.fromkeys([lower, folded, folded.lower()])
    return [v for v in variants if v != value and len(v) >= MIN_SYNONYM_LENGTH]


def _enum_request(
    table: TableProfile, column: ColumnProfile, value: Any
) -> Callable[[Describer], Description]:
    """Asks a describer about one enum value (bound now, not when the loop has moved on)."""
    return lambda d: d.describe_enum(table, column, value)


class EntryBuilder:
    """Builds the UKF entries of profiled tables of one database.

    Args:
        database: the database name used in the tags.
        stored: versions and descriptions of entries already in the store.
        describer: fills missing descriptions and synonyms; None to leave them empty.
    """

    def __init__(
        self, database: str, stored: VersionSource, describer: Describer | None = None
    ) -> None:
        self.database = database
        self._stored = stored
        self._describer = describer
        self.described = 0

    def build(self, table: TableProfile) -> list[BaseUKF]:
        """The Table UKF, then each Column UKF followed by its Enum UKF."""
        entry = TableUKF.create(
            self.database,
            table.name,
            columns=[c.name for c in table.columns],
            primary_key=table.primary_key,
            foreign_keys=[
                ForeignKey(
                    columns=tuple(fk.columns),
                    ref_table=fk.ref_table,
                    ref_columns=tuple(fk.ref_columns),
                )
                for fk in table.foreign_keys
            ],
            row_count=table.row_count,
            comment=table.comment,
            creator=PROFILER,
            synonyms=name_variants(table.name),
            content_resources={"kind": table.kind, "statistics": table.statistics()},
        )
        self._describe(entry, lambda d: d.describe_table(table))
        entries: list[BaseUKF] = [entry]
        for column in table.columns:
            entries += self._column(entry, table, column)
        return entries

    def _column(
        self, table_entry: TableUKF, table: TableProfile, col: ColumnProfile
    ) -> list[BaseUKF]:
        version, parents = self._stored.column_version(table.name, col.name, col.data_type)
        column = ColumnUKF.create(
            table_entry,
            col.name,
            data_type=col.data_type,
            semantic_type=col.semantic_type,
            nullable=col.nullable,
            primary_key=col.primary_key,
            examples=col.examples,
            statistics=col.statistics,
            comment=col.comment,
            version=version,
            parents=parents,
            synonyms=name_variants(col.name),
            content_resources={"references": col.references},
        )
        self._describe(column, lambda d: d.describe_column(table, col))
        entries: list[BaseUKF] = [column]
        seen = {column.id}
        for value, count, frequency in col.enum_values or []:
            enum = EnumUKF.create(
                column,
                value,
                count=count,
                frequency=frequency,
                version=version,
                synonyms=value_variants(value),
            )
            if enum.id in seen:  # values that differ only in spacing share a tag
                logger.debug("skipping enum %r of %s.%s: same id", value, table.name, col.name)
                continue
            seen.add(enum.id)
            self._describe(enum, _enum_request(table, col, value))
            entries.append(enum)
        return entries

    def _describe(self, entry: BaseUKF, ask: Callable[[Describer], Description]) -> None:
        if self._describer is None or entry.description or self._stored.has_description(entry):
            return
        try:
            found = ask(self._describer)
        except StopProfiling:
            raise
        except Exception as exc:  # a describer (LLM) failure must not stop profiling
            logger.warning("describer failed on %s %s: %s", entry.type, entry.name, exc)
            return
        self.described += 1
        entry.description = found.description.strip()
        entry.add_synonyms(found.synonyms)
