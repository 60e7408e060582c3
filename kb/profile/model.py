"""Data model of column profiling: options, profiles, the describer protocol and the report.

Plain dataclasses: profiles are built by ``kb.profile.table`` and turned into Table / Column /
Enum UKF by ``kb.profile.entries``; ``kb.profile.profiler.profile_database`` wires them together.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, Literal, Protocol

from kb.target.reflection import ForeignKeyInfo, TableKind

SemanticType = Literal["numeric", "categorical", "text", "temporal", "identifier"]
SEMANTIC_TYPES: tuple[SemanticType, ...] = (
    "numeric",
    "categorical",
    "text",
    "temporal",
    "identifier",
)


@dataclass(frozen=True)
class ProfileOptions:
    """How much work profiling does, and the thresholds of the type rules.

    Attributes:
        sample_rows: rows read into Python per table; a bigger table is sampled
            deterministically (same data, same sample, same statistics).
        exact_max_rows: up to this many rows, counts, distinct counts, min/max/mean and top
            values of a sampled table come from SQL aggregates over the whole table; above it
            they come from the sample, except for indexed columns (distinct, min, max).
        enum_max_distinct: categorical columns with at most this many values get Enum UKF.
        categorical_max_distinct: strings with at most this many classes are categorical.
        categorical_max_ratio: ... or with at most this distinct/non-null ratio.
        text_min_mean_length: strings at least this long on average are free-form text.
        identifier_min_unique: unique, dense integers with at least this many values are
            identifiers even without a key or an ``id`` name.
        top_k: most common values kept in a column's statistics.
        examples: example values kept per column.
        query_timeout_s: time limit of each profiling query; a query cut off only drops the
            figures it would have given (logged as a warning).
        columns_per_query: columns read or aggregated by one query (wide tables are chunked).
        seed: seed of the deterministic sample.
        progress: show a tqdm progress bar over tables.
    """

    sample_rows: int = 20_000
    exact_max_rows: int = 1_000_000
    enum_max_distinct: int = 100
    categorical_max_distinct: int = 100
    categorical_max_ratio: float = 0.05
    text_min_mean_length: float = 40.0
    identifier_min_unique: int = 1_000
    top_k: int = 10
    examples: int = 5
    query_timeout_s: float = 60.0
    columns_per_query: int = 64
    seed: int = 42
    progress: bool = True

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
                raise ValueError(f"ProfileOptions.{item.name} must not be negative, got {value}")
        for name in ("sample_rows", "columns_per_query", "query_timeout_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"ProfileOptions.{name} must be positive")


@dataclass
class ColumnProfile:
    """What profiling learned about one column.

    ``statistics`` follows the layout documented in ``kb.profile.profiler``; ``enum_values`` lists
    ``(value, count, frequency)`` of a categorical column within the enum limit (most common
    first), and is None for every other column.
    """

    name: str
    data_type: str
    semantic_type: SemanticType
    nullable: bool = True
    primary_key: bool = False
    comment: str | None = None
    statistics: dict[str, Any] = field(default_factory=dict)
    examples: list[Any] = field(default_factory=list)
    enum_values: list[tuple[Any, int, float]] | None = None
    references: list[dict[str, str]] = field(default_factory=list)


@dataclass
class TableProfile:
    """One table or view: its keys, size and column profiles."""

    name: str
    kind: TableKind
    row_count: int | None
    columns: list[ColumnProfile]
    primary_key: list[str] = field(default_factory=list)
    foreign_keys: list[ForeignKeyInfo] = field(default_factory=list)
    comment: str | None = None
    sample_size: int = 0
    warnings: list[str] = field(default_factory=list)
    elapsed: float = 0.0

    @property
    def sampled(self) -> bool:
        """True when the Python-side figures come from a sample, not every row."""
        return self.row_count is None or self.sample_size < self.row_count

    def column(self, name: str) -> ColumnProfile:
        """The profile of column ``name``.

        Raises:
            KeyError: naming the column and the table.
        """
        for col in self.columns:
            if col.name == name:
                return col
        raise KeyError(f"table {self.name!r} has no column {name!r}")

    def statistics(self) -> dict[str, Any]:
        """Table statistics as stored in the Table UKF (stable for unchanged data)."""
        kinds = {kind: 0 for kind in SEMANTIC_TYPES}
        for col in self.columns:
            kinds[col.semantic_type] += 1
        return {
            "row_count": self.row_count,
            "column_count": len(self.columns),
            "sample_size": self.sample_size,
            "sampled": self.sampled,
            "semantic_types": kinds,
        }


@dataclass
class DatabaseProfile:
    """Every profiled table of one database."""

    name: str
    dialect: str
    tables: list[TableProfile] = field(default_factory=list)

    @property
    def table_count(self) -> int:
        """Number of profiled tables and views."""
        return len(self.tables)

    @property
    def column_count(self) -> int:
        """Number of profiled columns."""
        return sum(len(t.columns) for t in self.tables)

    @property
    def row_count(self) -> int:
        """Rows over all tables (unknown counts as 0)."""
        return sum(t.row_count or 0 for t in self.tables)

    @property
    def foreign_keys(self) -> list[tuple[str, ForeignKeyInfo]]:
        """``(table, foreign key)`` pairs over the whole database."""
        return [(t.name, fk) for t in self.tables for fk in t.foreign_keys]

    def table(self, name: str) -> TableProfile:
        """The profile of table ``name``.

        Raises:
            KeyError: naming the table.
        """
        for table in self.tables:
            if table.name == name:
                return table
        raise KeyError(f"database {self.name!r} has no profiled table {name!r}")


@dataclass(frozen=True)
class Description:
    """A description and synonyms for one table, column or enum value."""

    description: str = ""
    synonyms: tuple[str, ...] = ()


class StopProfiling(Exception):
    """Raised by a describer to stop profiling at once (a cancelled job, a stopping worker).

    Any other describer failure only skips that entry's description; this one is never
    swallowed, and nothing is written to the store."""


ProgressCallback = Callable[[float, str], None]
"""Called with the fraction of a profiling run done (0..1, never decreasing) and a line
saying what is being done; it may raise (e.g. :class:`StopProfiling`) to stop the run."""


class Describer(Protocol):
    """Fills descriptions and synonyms that the database does not provide (e.g. with an LLM).

    Called only for entries that have no description yet (no database comment, nothing in
    the store), so re-profiling does not ask again. Raising :class:`StopProfiling` stops the
    whole profiling run.
    """

    def describe_table(self, table: TableProfile) -> Description:
        """Describe a table from its profile (its columns included)."""
        ...

    def describe_column(self, table: TableProfile, column: ColumnProfile) -> Description:
        """Describe one column of ``table``."""
        ...

    def describe_enum(self, table: TableProfile, column: ColumnProfile, value: Any) -> Description:
        """Describe one value of a categorical column."""
        ...


@dataclass
class ProfileReport:
    """What one ``profile_database`` run found and wrote.

    Attributes:
        database: the database name used in the UKF tags.
        profile: the table and column profiles.
        added: ids of entries written for the first time (or brought back from inactive).
        updated: ids of entries whose content or relations changed.
        unchanged: ids of entries that were already in the store as they are.
        invalidated: ids marked inactive: schema entries of dropped tables, columns and enum
            values, old versions of columns whose type changed, and every active entry whose
            ``related`` points at one of those.
        store_version: the store's version after the run.
        elapsed: seconds for the whole run.
    """

    database: str
    profile: DatabaseProfile
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    invalidated: list[str] = field(default_factory=list)
    store_version: int = 0
    elapsed: float = 0.0

    @property
    def changed(self) -> bool:
        """Whether the run wrote anything."""
        return bool(self.added or self.updated or self.invalidated)

    def summary(self) -> str:
        """One line for logs and the CLI."""
        p = self.profile
        return (
            f"{self.database}: {p.table_count} tables, {p.column_count} columns, "
            f"{p.row_count} rows; {len(self.added)} added, {len(self.updated)} updated, "
            f"{len(self.unchanged)} unchanged, {len(self.invalidated)} invalidated "
            f"in {self.elapsed:.2f} s"
        )
