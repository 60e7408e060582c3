"""The ``dictionary`` job kind: attach a data dictionary from the import folder.

Parameters (:class:`DictionaryParams`): ``path`` (a file inside the import folder, as for
the ``import`` job), ``database_name`` (the database of records that name none; default the
configured target name), ``dry_run`` and ``overwrite`` (see :mod:`kb.dictionary.apply`).
The dictionary writes global schema knowledge, so a key scoped to a workspace may not submit
it (like ``profile``). The result is the import's JSON report (``matched``, ``unknown``,
``unchanged``, ``written``, per table); the writes are audited with the submitter and the
job id. A refused dictionary fails the job with the reason, nothing written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from kb.dictionary import apply_dictionary, read_dictionary
from server.access import check_global_writer
from server.auth import Identity
from server.worker import JobContext

if TYPE_CHECKING:
    from server.state import AppState


class DictionaryParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="data dictionary file name inside the import folder")
    database_name: str | None = Field(
        default=None, description="database of records that name none; default the target"
    )
    dry_run: bool = False
    overwrite: bool = Field(default=False, description="replace descriptions from elsewhere")


def authorize_dictionary(identity: Identity) -> None:
    """A data dictionary writes global knowledge: not for a workspace-scoped key."""
    check_global_writer(identity, "dictionary jobs write")


def run_dictionary(
    state: AppState, context: JobContext, params: DictionaryParams
) -> dict[str, Any]:
    from server.job_kinds import import_path  # the import job's folder rule

    submitter = Identity.from_dict(context.submitter)
    authorize_dictionary(submitter)
    path = import_path(state.settings.resolved_import_dir, params.path)
    context.progress(0.05, f"reading {path.name}")
    dictionary = read_dictionary(path)
    database = params.database_name
    if database is None and None in dictionary.databases():
        database = state.settings.resolved_target_name
    context.progress(0.4, f"{len(dictionary.records)} records; matching them to the schema")
    context.check()
    report = apply_dictionary(
        state.store,
        dictionary,
        database=database,
        dry_run=params.dry_run,
        overwrite=params.overwrite,
    )
    result = report.to_dict()
    context.log(report.summary())
    if report.written_ids and not params.dry_run:
        detail = {k: result[k] for k in ("file", "sha256", "databases", "matched", "written")}
        state.knowledge.record_job_writes(
            "dictionary",
            submitter,
            report.written_ids,
            report.store_version,
            detail,
            context.job_id,
        )
    return result
