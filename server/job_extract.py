"""The ``extract`` job kind: knowledge from documents in the import folder (SIE).

Parameters (:class:`ExtractParams`): ``paths`` (files inside the import folder, as for the
``import`` job: Markdown, text, HTML or PDF), ``database_name`` (default the configured
target's name), ``dry_run`` and ``activate`` (activate the extracted candidates at once
instead of leaving them to the review queue). Every document is read first: one that is
refused (:class:`kb.documents.DocumentError`: unreadable or encrypted PDF, empty, over 20 MB,
binary, unsupported) fails the job with the reason naming the file, and nothing is written.
The model is the describe tier's (else the default tier's), its calls giving way to questions
(a background turn, as the mine job's pairer). Without ``no_llm`` on a server with no model
the job is refused when submitted (:func:`extract_refusal`).

Extraction writes global knowledge, so a key scoped to a workspace may not submit it (like
``dictionary``). Progress is reported per section part and cancellation checked there (and
inside the model's call); a job run again after a stop does not read the parts already read
(the checkpoint, :mod:`agents.learn.documents.checkpoint`), and an unchanged document is not
read at all. The result is the :class:`~agents.learn.documents.ExtractionReport` as JSON; the
writes are audited (``extract``) with the submitter and the job id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from agents.learn.documents import LLMSectionExtractor, SectionExtractor, extract_documents
from kb.documents import read_document
from server.access import check_global_writer
from server.auth import Identity
from server.worker import JobContext

if TYPE_CHECKING:
    from server.state import AppState

EXTRACT_ACTION = "extract"
LIST_LIMIT = 200


class ExtractParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    paths: list[str] = Field(min_length=1, description="document files inside the import folder")
    database_name: str | None = Field(
        default=None, description="the database the documents are about; default the target"
    )
    dry_run: bool = False
    activate: bool = Field(default=False, description="activate the candidates at once")
    no_llm: bool = Field(
        default=False, description="the table pass only (rows keyed by stored values), no model"
    )
    skip_covered_tables: bool = Field(
        default=False, description="no model call for a table section covered row by row"
    )


def authorize_extract(identity: Identity) -> None:
    """Extraction writes global knowledge: not for a workspace-scoped key."""
    check_global_writer(identity, "extract jobs write")


def extract_refusal(state: AppState, params: ExtractParams) -> str | None:
    """Why this server cannot run an extract job with ``params`` (None: it can): the model
    reads the sections unless ``no_llm``, so without ``no_llm`` a model must be configured
    (the describe tier, else the default one). The kind's submit-time check (the submit
    route answers 409 with it, naming the way out); the runner fails with it too."""
    if params.no_llm or state.llms is not None:
        return None
    return (
        "no LLM is configured on this server, and the model reads the documents' sections; "
        "configure an LLM tier, or pass no_llm: true for the table pass alone"
    )


def run_extract(state: AppState, context: JobContext, params: ExtractParams) -> dict[str, Any]:
    if params.no_llm:
        return extract_job(state, context, params, None)
    if state.llms is None:
        raise RuntimeError(f"extract: {extract_refusal(state, params)}")
    from server.llm_factory import BackgroundLLM

    model = state.llms.get(state.settings.describe_tier)
    llm = BackgroundLLM(model, state.llm_gate) if state.llm_gate is not None else model
    return extract_job(state, context, params, LLMSectionExtractor(llm))


def extract_job(
    state: AppState,
    context: JobContext,
    params: ExtractParams,
    extractor: SectionExtractor | None,
) -> dict[str, Any]:
    """The job with ``extractor`` reading the sections (the runner's body)."""
    from server.job_kinds import import_path  # the import job's folder rule

    submitter = Identity.from_dict(context.submitter)
    authorize_extract(submitter)
    folder = state.settings.resolved_import_dir
    paths = [import_path(folder, name) for name in params.paths]
    context.progress(0.02, f"reading {len(paths)} document(s)")
    documents = [read_document(path) for path in paths]
    database = params.database_name or state.settings.resolved_target_name
    if database is None:
        raise ValueError("extract: no database_name given and no target configured")
    target = state.target if database == state.settings.resolved_target_name else None

    def progress(done: int, total: int, name: str) -> None:
        context.progress(0.05 + 0.9 * done / max(total, 1), f"{name}: part {done} of {total}")

    report = extract_documents(
        state.store,
        documents,
        extractor,
        database=database,
        job_id=context.job_id,
        target=target,
        dry_run=params.dry_run,
        activate=params.activate,
        skip_covered_tables=params.skip_covered_tables,
        by=f"job:{context.job_id}",
        progress=progress,
        cancellation=context.cancellation,
    )
    context.log(report.summary())
    result = report.to_dict()
    if report.written_ids and not params.dry_run:
        detail = {**report.audit_detail(), "activated": len(report.activated_ids)}
        state.knowledge.record_job_writes(
            EXTRACT_ACTION,
            submitter,
            report.written_ids,
            report.store_version or state.store.version,
            detail,
            context.job_id,
        )
    for name in (
        "candidate_ids",
        "activated_ids",
        "retracted_ids",
        "deactivated_ids",
        "failed_parts",
    ):
        if len(result[name]) > LIST_LIMIT:
            result.setdefault("truncated", {})[name] = len(result[name]) - LIST_LIMIT
            result[name] = result[name][:LIST_LIMIT]
    return result
