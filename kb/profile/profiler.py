"""Column profiling of a target database into Table / Column / Enum UKF (RubikSQL §4.2.1).

::

    with Database("sqlite:///concert_singer.sqlite") as db, KnowledgeStore(url) as store:
        report = profile_database(db, store, database_name="concert_singer")
        print(report.summary())

Pipeline (one function per step, each testable alone):

1. reflect the schema (``Database.reflect``);
2. per table (tqdm progress bar): count, sample, aggregate, annotate and describe each column
   (``kb.profile.table``, ``kb.profile.stats``, ``kb.profile.annotate``,
   ``kb.profile.temporal``, queries in ``kb.profile.sql``);
3. build Table, Column and Enum UKF (``kb.profile.entries``), asking an optional ``Describer``
   for missing descriptions and synonyms;
   an optional ``progress`` callback hears of each column (step 2) and each describer call
   (step 3), and may raise ``StopProfiling`` to stop before step 4 writes anything;
4. compare with the store and write only what changed, invalidating knowledge about dropped
   or changed schema (``kb.profile.sync``).

Semantic types and their rules are documented in ``kb.profile.annotate``.

**Layout of ``ColumnUKF.content_resources``** (what indices and the toolkit read)::

    database, table, column, data_type, nullable, primary_key, comment  (constructor)
    semantic_type: "numeric" | "categorical" | "text" | "temporal" | "identifier"
    examples:      up to ``examples`` JSON values (most common first for categorical/text)
    references:    [{"table", "column"}] targets of the column's foreign keys
    statistics:
        row_count, non_null_count, null_count, null_fraction,
        distinct_count, distinct_ratio,
        counts_exact   (False: non-null and distinct counts estimated from the sample)
        sample_size, sampled
        # exactly one of the following, by semantic type:
        numeric:    {kind: "integer"|"float", mean, min, p25, p50, p75, max, std,
                     exact (min/max/mean over every row), quartiles_exact}
        values:     {classes, top: [{value, count, frequency, cumulative_frequency}],
                     max_length, mean_length, exact}          # categorical and text
        temporal:   {format (strptime), format_source: "detected"|"type"|None,
                     ambiguous_with: [formats], min, max (in format), min_iso, max_iso, exact}
        identifier: {unique, min, max (integers), max_length (strings)}

``TableUKF.content_resources`` adds ``kind`` ("table" | "view") and ``statistics``
``{row_count, column_count, sample_size, sampled, semantic_types: {type: count}}`` to the
constructor's fields. ``EnumUKF.content_resources`` holds ``value``, ``count`` and
``frequency`` (share of non-null rows). Frequencies are shares of the non-null rows.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from tqdm import tqdm

from kb.profile.entries import PROFILER, EntryBuilder
from kb.profile.model import (
    ColumnProfile,
    DatabaseProfile,
    Describer,
    Description,
    ProfileOptions,
    ProfileReport,
    ProgressCallback,
    SemanticType,
    StopProfiling,
    TableProfile,
)
from kb.profile.sync import StoredSchema, apply_changes, plan_changes
from kb.profile.table import profile_table
from kb.store import KnowledgeStore
from kb.target.database import Database

__all__ = [
    "ColumnProfile",
    "DatabaseProfile",
    "Describer",
    "Description",
    "ProfileOptions",
    "ProfileReport",
    "ProgressCallback",
    "SemanticType",
    "StopProfiling",
    "TableProfile",
    "profile_database",
    "profile_schema",
]

logger = logging.getLogger(__name__)
STATISTICS_SHARE = 0.5
"""Share of ``profile_database``'s reported progress given to column statistics; the rest
goes to building entries (the describer's calls)."""


class _ProgressDescriber:
    """Reports progress before each call of the wrapped describer (one LLM call at most)."""

    def __init__(self, inner: Describer, report: ProgressCallback, tables: int) -> None:
        self.inner, self.report, self.tables = inner, report, tables
        self.index, self.calls, self.expected = 0, 0, 1

    def start_table(self, index: int, table: TableProfile) -> None:
        self.index, self.calls = index, 0
        enums = sum(len(c.enum_values or ()) for c in table.columns)
        self.expected = 1 + len(table.columns) + enums

    def _step(self, what: str, table: TableProfile) -> None:
        done = min(self.calls, self.expected - 1) / self.expected
        self.calls += 1
        fraction = STATISTICS_SHARE + (1 - STATISTICS_SHARE) * (self.index + done) / self.tables
        self.report(
            fraction, f"describing {what} of {table.name} ({self.index + 1}/{self.tables} tables)"
        )

    def describe_table(self, table: TableProfile) -> Description:
        self._step("the table", table)
        return self.inner.describe_table(table)

    def describe_column(self, table: TableProfile, column: ColumnProfile) -> Description:
        self._step("columns", table)
        return self.inner.describe_column(table, column)

    def describe_enum(self, table: TableProfile, column: ColumnProfile, value: Any) -> Description:
        self._step(f"values of {column.name}", table)
        return self.inner.describe_enum(table, column, value)


def profile_schema(
    database: Database,
    *,
    database_name: str,
    options: ProfileOptions | None = None,
    progress: ProgressCallback | None = None,
) -> DatabaseProfile:
    """Profile every table and view of ``database`` without touching any store.

    Args:
        database: the target database (read-only).
        database_name: name recorded in the profile.
        options: sampling limits and type-rule thresholds (defaults when None).
        progress: called before each table and after each column with the fraction of
            tables done; what it raises stops profiling.

    Raises:
        TargetConnectionError: the database cannot be reached.
    """
    options = options or ProfileOptions()
    infos = database.reflect()
    profile = DatabaseProfile(name=database_name, dialect=database.dialect)
    bar = tqdm(
        infos.values(),
        desc=f"profiling {database_name}",
        unit="table",
        disable=not options.progress,
        leave=False,
    )
    total = len(infos)
    for index, info in enumerate(bar):
        bar.set_postfix_str(info.name, refresh=False)
        on_column = None
        if progress is not None:
            where = f"{info.name} ({index + 1}/{total} tables)"
            progress(index / total, f"profiling columns of {where}")

            def on_column(done: int, count: int, index: int = index, where: str = where) -> None:
                progress(
                    (index + done / max(count, 1)) / total,
                    f"profiled column {done}/{count} of {where}",
                )

        profile.tables.append(profile_table(database, info, options, infos, on_column))
    return profile


def profile_database(
    database: Database,
    store: KnowledgeStore,
    *,
    database_name: str,
    describer: Describer | None = None,
    options: ProfileOptions | None = None,
    progress: ProgressCallback | None = None,
) -> ProfileReport:
    """Profile ``database`` and write its Table, Column and Enum UKF into ``store``.

    Re-profiling is incremental: unchanged entries keep their ids and are not rewritten;
    knowledge about dropped or changed schema is marked inactive (see ``kb.profile.sync``).

    Args:
        database: the target database (read-only).
        store: the knowledge store to update.
        database_name: the ``[DATABASE:...]`` tag of every entry written.
        describer: fills descriptions and synonyms of entries that have none (e.g. an LLM).
        options: sampling limits and type-rule thresholds (defaults when None).
        progress: called with the fraction done (never decreasing) and what is being done:
            after each column's statistics, then before each describer call (per table when
            there is no describer); what it raises (e.g. ``StopProfiling``) stops the run
            before anything is written.

    Returns:
        The profiles and the ids added, updated, unchanged and invalidated.

    Raises:
        TargetConnectionError: the database cannot be reached.
    """
    started = time.perf_counter()
    options = options or ProfileOptions()
    logger.info("profiling %s (%s) as %r", database.url, database.dialect, database_name)
    statistics = None
    if progress is not None:
        report_progress = progress

        def statistics(fraction: float, message: str) -> None:
            report_progress(STATISTICS_SHARE * fraction, message)

    profile = profile_schema(
        database, database_name=database_name, options=options, progress=statistics
    )
    stored = StoredSchema.load(store, database_name, PROFILER)
    reporting = None
    if progress is not None and describer is not None:
        reporting = _ProgressDescriber(describer, progress, max(len(profile.tables), 1))
    builder = EntryBuilder(database_name, stored, reporting or describer)
    entries = []
    for index, table in enumerate(profile.tables):
        if reporting is not None:
            reporting.start_table(index, table)
        elif progress is not None:
            share = STATISTICS_SHARE + (1 - STATISTICS_SHARE) * index / len(profile.tables)
            progress(share, f"building entries of {table.name}")
        entries.extend(builder.build(table))
    plan = plan_changes(store, stored, entries)
    version = apply_changes(store, plan)
    report = ProfileReport(
        database=database_name,
        profile=profile,
        added=[e.id for e in plan.added],
        updated=[e.id for e in plan.updated],
        unchanged=plan.unchanged,
        invalidated=plan.invalidated,
        store_version=version,
        elapsed=time.perf_counter() - started,
    )
    logger.info("%s (described %d entries)", report.summary(), builder.described)
    return report
