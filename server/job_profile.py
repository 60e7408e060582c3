"""The ``profile`` and ``describe`` jobs: the target database profiled into Table / Column /
Enum UKF (incremental), ``describe`` with an LLM describer filling missing descriptions and
synonyms. They write global knowledge, so a key scoped to a workspace may not submit them; a
cancelled run stops before it writes anything."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, cast

from pydantic import BaseModel, ConfigDict, Field

from kb.profile.model import ColumnProfile, Describer, Description, TableProfile
from kb.profile.profiler import ProfileOptions, profile_database
from server.access import check_global_writer
from server.auth import Identity
from server.worker import JobContext

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    from kb.store import KnowledgeStore
    from server.state import AppState


class ProfileParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    database_name: str | None = Field(
        default=None, description="[DATABASE:...] tag; default the configured target name"
    )
    sample_rows: int | None = Field(default=None, gt=0)
    exact_max_rows: int | None = Field(default=None, ge=0)
    enum_max_distinct: int | None = Field(default=None, ge=0)


# ---------------------------------------------------------------------- profile / describe
_PROFILE_START, _PROFILE_END = 0.02, 0.9
"""The job progress that profiling spans; writing to the store starts at the end."""


class _GuardedStore:
    """The store as profiling sees it: cancellation is honoured until the first write."""

    def __init__(self, store: Any, context: JobContext) -> None:
        self._store, self._context = store, context
        self.writing = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def _before_write(self) -> None:
        if not self.writing:
            self._context.check()
            self._context.progress(_PROFILE_END, "writing to the knowledge store")
            self.writing = True

    def upsert_many(self, *args: Any, **kwargs: Any) -> int:
        self._before_write()
        return self._store.upsert_many(*args, **kwargs)

    def remove(self, *args: Any, **kwargs: Any) -> int:
        self._before_write()
        return self._store.remove(*args, **kwargs)


class _ReportingDescriber:
    """Wraps a describer: counts its calls and checks for cancellation before each one
    (progress lines come from ``profile_database``'s callback). A call under way is stopped by
    the job's :attr:`JobContext.cancellation`, current in the worker's thread: the describer's
    :class:`~kb.profile.model.StopProfiling` becomes the job's cancellation in
    :meth:`JobContext.run`."""

    def __init__(self, inner: Describer, context: JobContext) -> None:
        self.inner, self.context, self.calls = inner, context, 0

    def _step(self, what: str) -> None:
        self.calls += 1
        self.context.check()
        logger.debug("describing %s (%d so far)", what, self.calls)

    def describe_table(self, table: TableProfile) -> Description:
        self._step(f"table {table.name}")
        return self.inner.describe_table(table)

    def describe_column(self, table: TableProfile, column: ColumnProfile) -> Description:
        self._step(f"column {table.name}.{column.name}")
        return self.inner.describe_column(table, column)

    def describe_enum(self, table: TableProfile, column: ColumnProfile, value: Any) -> Description:
        self._step(f"value {value!r} of {table.name}.{column.name}")
        return self.inner.describe_enum(table, column, value)


def _profile(
    state: AppState, context: JobContext, params: ProfileParams, describer: Describer | None
) -> dict[str, Any]:
    if state.target is None:
        raise RuntimeError("no target database is configured (ALMANAC_TARGET_URL)")
    submitter = Identity.from_dict(context.submitter)
    writes_global_knowledge(submitter)  # also for jobs queued before the rule existed
    name = params.database_name or state.settings.resolved_target_name or "target"
    overrides = params.model_dump(exclude={"database_name"}, exclude_none=True)
    options = ProfileOptions(progress=False, **overrides)
    action = "describe" if describer else "profile"
    context.progress(0.02, f"profiling {state.target.url} as {name!r}")
    state.target.refresh()
    store = _GuardedStore(state.store, context)
    wrapped = _ReportingDescriber(describer, context) if describer else None
    report = profile_database(
        state.target,
        cast("KnowledgeStore", store),  # a proxy: every other attribute is the store's
        database_name=name,
        describer=wrapped,
        options=options,
        progress=lambda fraction, message: context.progress(
            _PROFILE_START + (_PROFILE_END - _PROFILE_START) * fraction, message
        ),
    )
    written = [*report.added, *report.updated, *report.invalidated]
    summary = {
        "database": name,
        "summary": report.summary(),
        "tables": report.profile.table_count,
        "columns": report.profile.column_count,
        "added": len(report.added),
        "updated": len(report.updated),
        "unchanged": len(report.unchanged),
        "invalidated": len(report.invalidated),
        "described": wrapped.calls if wrapped else 0,
        "store_version": report.store_version,
    }
    context.log(report.summary())
    if written:
        state.knowledge.record_job_writes(
            action,
            submitter,
            written,
            report.store_version,
            {k: v for k, v in summary.items() if k != "summary"},
            context.job_id,
        )
    return summary


def run_profile(state: AppState, context: JobContext, params: ProfileParams) -> dict[str, Any]:
    return _profile(state, context, params, None)


def run_describe(state: AppState, context: JobContext, params: ProfileParams) -> dict[str, Any]:
    if state.describer_factory is None:
        raise RuntimeError("no describer is configured")
    return _profile(state, context, params, state.describer_factory())


def writes_global_knowledge(identity: Identity) -> None:
    check_global_writer(identity, "profile and describe jobs write")


def needs_target(state: AppState) -> str | None:
    return None if state.target is not None else "no target database is configured"


def needs_describer(state: AppState) -> str | None:
    if state.describer_factory is None:
        return "no describer (LLM) is configured"
    return needs_target(state)
