"""Profile one table: count, sample, aggregate, then describe every column.

Three regimes, by row count:

- **whole table** (rows ≤ ``sample_rows``): every row is read once (chunked by columns) and
  every figure is exact, computed in Python; no other query runs.
- **sampled, exact counts** (rows ≤ ``exact_max_rows``): a deterministic sample gives the
  quartiles, formats, lengths and type evidence; one aggregate query per column chunk gives
  ``COUNT(col)``, ``COUNT(DISTINCT col)``, ``MIN``, ``MAX``, ``AVG`` and the longest value, and
  ``GROUP BY col ORDER BY count DESC LIMIT k`` the top values of categorical and text columns.
- **sampled** (bigger): as above, but only indexed columns get SQL figures (distinct, min,
  max, top values); the others are estimated from the sample.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from kb.profile.annotate import declared_family
from kb.profile.model import ProfileOptions, TableProfile
from kb.profile.sql import TableReader
from kb.profile.stats import ColumnInput, profile_column
from kb.target.database import Database
from kb.target.reflection import ColumnInfo, ForeignKeyInfo, TableInfo

logger = logging.getLogger(__name__)
T = TypeVar("T")
_ORDERED = ("integer", "float", "temporal", "string", "")


def _chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _plan(column: ColumnInfo, exact: bool, indexed: bool) -> tuple[str, ...]:
    """The SQL aggregates worth running for ``column`` (see ``kb.profile.sql.AGGREGATES``)."""
    family = declared_family(column.type)
    stats: list[str] = ["non_null"] if exact else []
    if exact or indexed:
        stats.append("distinct")
        if family in _ORDERED:
            stats += ["min", "max"]
    if exact and family in ("integer", "float"):
        stats.append("avg")
    if exact and family in ("string", ""):
        stats.append("max_length")
    return tuple(stats)


def _match(name: str, known: Sequence[str]) -> str:
    if name in known:
        return name
    return next((k for k in known if k.lower() == name.lower()), name)


def normalize_foreign_keys(
    info: TableInfo, tables: Mapping[str, TableInfo]
) -> list[ForeignKeyInfo]:
    """Foreign keys of ``info`` with table and column names as the database spells them.

    SQLite accepts ``REFERENCES Singer(singer_id)`` for a table ``singer``, and
    ``REFERENCES t`` without columns (meaning its primary key); both are resolved here.
    Duplicates are dropped.
    """
    own = [c.name for c in info.columns]
    found: dict[tuple[Any, ...], ForeignKeyInfo] = {}
    for fk in info.foreign_keys:
        ref_table = _match(fk.ref_table, list(tables))
        target = tables.get(ref_table)
        ref_names = [c.name for c in target.columns] if target else []
        ref_columns = [_match(c, ref_names) for c in fk.ref_columns if c]
        if not ref_columns and target is not None:
            ref_columns = list(target.primary_key)
        fixed = dataclasses.replace(
            fk,
            columns=[_match(c, own) for c in fk.columns],
            ref_table=ref_table,
            ref_columns=ref_columns,
        )
        found.setdefault((tuple(fixed.columns), ref_table, tuple(ref_columns)), fixed)
    return list(found.values())


def profile_table(
    database: Database,
    info: TableInfo,
    options: ProfileOptions,
    tables: Mapping[str, TableInfo] | None = None,
    on_column: Callable[[int, int], None] | None = None,
) -> TableProfile:
    """Profile one table or view.

    Args:
        database: the target database.
        info: the reflected table.
        options: sampling limits and type-rule thresholds.
        tables: every reflected table of the database, to resolve foreign keys.
        on_column: called with (columns profiled, columns in the table) after each column.

    Raises:
        TargetConnectionError: the database cannot be reached.
    """
    started = time.perf_counter()
    reader = TableReader(database, info, options)
    row_count = reader.row_count()
    whole = row_count is not None and row_count <= options.sample_rows
    exact = row_count is not None and row_count <= options.exact_max_rows
    indexed = set() if whole or exact else reader.indexed_columns()
    foreign_keys = normalize_foreign_keys(info, tables or {info.name: info})
    keys = set(info.primary_key) | {c for fk in foreign_keys for c in fk.columns}
    references: dict[str, list[dict[str, str]]] = {}
    for fk in foreign_keys:
        for name, ref in zip(fk.columns, fk.ref_columns, strict=False):
            references.setdefault(name, []).append({"table": fk.ref_table, "column": ref})
    columns, sample_size = [], 0
    for chunk in _chunks(info.columns, options.columns_per_query):
        rows = reader.sample([c.name for c in chunk], row_count)
        sample_size = max(sample_size, len(rows))
        plans = {} if whole else {c.name: _plan(c, exact, c.name in indexed) for c in chunk}
        aggregates = reader.aggregates(plans)
        for i, col in enumerate(chunk):
            sql_top = not whole and (exact or col.name in indexed)
            inp = ColumnInput(
                info=col,
                values=[row[i] for row in rows],
                row_count=row_count,
                whole_table=whole,
                aggregates=aggregates.get(col.name, {}),
                key=col.name in keys,
                references=references.get(col.name, []),
                top_values=_top_values(reader, col.name) if sql_top else None,
            )
            columns.append(profile_column(inp, options))
            if on_column is not None:
                on_column(len(columns), len(info.columns))
    profile = TableProfile(
        name=info.name,
        kind=info.kind,
        row_count=row_count,
        columns=columns,
        primary_key=list(info.primary_key),
        foreign_keys=foreign_keys,
        comment=info.comment,
        sample_size=sample_size,
        warnings=list(reader.warnings),
        elapsed=time.perf_counter() - started,
    )
    logger.debug(
        "profiled %s: %s rows, %d columns, sample %d, %.3f s",
        info.name,
        row_count,
        len(columns),
        sample_size,
        profile.elapsed,
    )
    return profile


def _top_values(reader: TableReader, column: str) -> Any:
    return lambda k: reader.top_values(column, k)
