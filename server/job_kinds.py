"""The kinds of job the server runs, their parameters, and who may submit them.

- ``profile``: profile the target database into Table / Column / Enum UKF (incremental,
  :mod:`server.job_profile`);
- ``describe``: the same, with an LLM describer filling missing descriptions and synonyms
  (any :class:`kb.profile.model.Describer`, made by the app state's describer factory);
- ``reindex``: rebuild the string, graph and vector indices from the store and swap them in;
- ``import``: import a JSONL file from the import folder, or JSONL sent inline;
- ``mine``: mine labeled experiences into candidate knowledge (:mod:`server.job_mine`);
- ``dictionary``: attach a data dictionary from the import folder (:mod:`server.job_dictionary`);
- ``extract``: knowledge from documents in the import folder (SIE, :mod:`server.job_extract`);
- ``cot``: checked CoT for verified experiences that have none (:mod:`server.job_cot`);
- ``synthesize``: new verified question-SQL pairs from the verified experiences and the
  profiled schema (:mod:`server.job_synthesize`);
- ``calibrate``: refit the answers' confidence calibrator on the verified answers
  (:mod:`server.job_calibrate`);
- ``distill-data``, ``distill-train``, ``distill-eval``: NL-CoT-SQL training tuples, a student
  fine-tuned on them, and the student benched against its base model
  (:mod:`server.job_distill`, permission ``distill``).

Kinds register here with their own permission, and
with :attr:`JobKind.authorize` when the permission alone is not enough: ``profile`` and
``describe`` write global knowledge, so a key scoped to a workspace may not submit them
(:func:`server.access.check_global_writer`); ``import`` checks every line and every entry it
would replace like ``POST /v1/knowledge/import`` does. Writes to the store are audited with
the submitter's identity and the job id; a cancelled profiling run stops before it writes
anything.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kb.jsonl import read_numbered_jsonl
from server.auth import Identity, Permission
from server.job_calibrate import CalibrateParams, authorize_calibrate, run_calibrate
from server.job_cot import CotParams, authorize_cot, cot_unavailable, run_cot
from server.job_dictionary import DictionaryParams, authorize_dictionary, run_dictionary
from server.job_distill import (
    DistillDataParams,
    DistillEvalParams,
    DistillTrainParams,
    run_distill_data,
    run_distill_eval,
    run_distill_train,
)
from server.job_distill import needs_target as distill_needs_target
from server.job_extract import ExtractParams, authorize_extract, extract_refusal, run_extract
from server.job_mine import MineParams, run_mine
from server.job_profile import (
    ProfileParams,
    needs_describer,
    needs_target,
    run_describe,
    run_profile,
    writes_global_knowledge,
)
from server.job_synthesize import SynthesizeParams, authorize_synthesize, run_synthesize
from server.job_synthesize import unavailable as synthesize_unavailable
from server.worker import JobContext, JobRunner

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    from server.state import AppState


class ReindexParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ImportParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str | None = Field(default=None, description="file name inside the import folder")
    jsonl: str | None = Field(default=None, description="JSON Lines sent inline")

    @model_validator(mode="after")
    def _one_source(self) -> ImportParams:
        if (self.path is None) == (self.jsonl is None):
            raise ValueError("give exactly one of 'path' and 'jsonl'")
        return self


Run = Callable[["AppState", JobContext, Any], dict[str, Any]]


@dataclass(frozen=True)
class JobKind:
    """A job kind: its parameter model, the permission to submit it, and its runner."""

    name: str
    description: str
    params: type[BaseModel]
    permission: Permission
    run: Run
    unavailable: Callable[[AppState], str | None] = lambda _state: None
    authorize: Callable[[Identity], None] = lambda _identity: None
    """Raises :class:`server.access.AccessDeniedError` (403) when this submitter may not run
    the kind although their role holds ``permission``."""
    refuse: Callable[[AppState, Any], str | None] = lambda _state, _params: None
    """Why this server cannot run a job of the kind with these (validated) parameters (None:
    it can), as ``unavailable`` for the kind as a whole: ``POST /v1/jobs`` answers 409."""


# --------------------------------------------------------------------------- reindex
def run_reindex(state: AppState, context: JobContext, _params: ReindexParams) -> dict[str, Any]:
    context.progress(0.01, "refreshing the store's query statistics")
    state.store.planner.analyze()
    return state.indices.rebuild(progress=context.progress)


# ---------------------------------------------------------------------------- import
def import_path(import_dir: Path, name: str) -> Path:
    """``name`` inside ``import_dir``; ValueError for anything that escapes it."""
    root = import_dir.resolve()
    path = (root / name).resolve()
    if not path.is_relative_to(root) or path == root:
        raise ValueError(f"import path {name!r} is outside the import folder")
    if not path.is_file():
        raise FileNotFoundError(f"no file {name!r} in the import folder")
    return path


def run_import(state: AppState, context: JobContext, params: ImportParams) -> dict[str, Any]:
    if params.path is not None:
        path = import_path(state.settings.resolved_import_dir, params.path)
        context.progress(0.05, f"validating {path.name}")
        entries, source = read_numbered_jsonl(path), path.name
    else:
        context.progress(0.05, "validating inline JSON Lines")
        entries, source = read_numbered_jsonl(io.StringIO(params.jsonl or "")), "inline"
    context.progress(0.5, f"{len(entries)} entries valid; importing")
    context.check()
    identity = Identity.from_dict(context.submitter)
    return state.knowledge.import_entries(
        entries, identity, source=f"job:{source}", job_id=context.job_id
    )


JOB_KINDS: dict[str, JobKind] = {
    kind.name: kind
    for kind in (
        JobKind(
            "profile",
            "profile the target database into schema knowledge",
            ProfileParams,
            Permission.JOBS_WRITE,
            run_profile,
            needs_target,
            writes_global_knowledge,
        ),
        JobKind(
            "describe",
            "profile, and describe what has no description with the LLM",
            ProfileParams,
            Permission.JOBS_WRITE,
            run_describe,
            needs_describer,
            writes_global_knowledge,
        ),
        JobKind(
            "reindex",
            "rebuild the search indices and swap them in",
            ReindexParams,
            Permission.JOBS_WRITE,
            run_reindex,
        ),
        JobKind(
            "import",
            "import JSON Lines knowledge (a file in the import folder, or inline)",
            ImportParams,
            Permission.JOBS_WRITE,
            run_import,
        ),
        JobKind(
            "mine",
            "mine labeled experiences into candidate knowledge (a workspace key: its own)",
            MineParams,
            Permission.JOBS_WRITE,
            run_mine,
        ),
        JobKind(
            "dictionary",
            "attach a data dictionary's descriptions (a file in the import folder)",
            DictionaryParams,
            Permission.JOBS_WRITE,
            run_dictionary,
            authorize=authorize_dictionary,
        ),
        JobKind(
            "extract",
            "extract knowledge from documents (files in the import folder) as candidates",
            ExtractParams,
            Permission.JOBS_WRITE,
            run_extract,
            authorize=authorize_extract,
            refuse=extract_refusal,
        ),
        JobKind(
            "cot",
            "explain verified SQL step by step with the teacher tier (checked CoT)",
            CotParams,
            Permission.JOBS_WRITE,
            run_cot,
            cot_unavailable,
            authorize=authorize_cot,
        ),
        JobKind(
            "synthesize",
            "synthesize verified question-SQL pairs from the verified experiences",
            SynthesizeParams,
            Permission.JOBS_WRITE,
            run_synthesize,
            synthesize_unavailable,
            authorize=authorize_synthesize,
        ),
        JobKind(
            "calibrate",
            "refit the answers' confidence calibrator on the verified answers",
            CalibrateParams,
            Permission.JOBS_WRITE,
            run_calibrate,
            authorize=authorize_calibrate,
        ),
        JobKind(
            "distill-data",
            "build NL-CoT-SQL training tuples from the target's verified experiences",
            DistillDataParams,
            Permission.DISTILL,
            run_distill_data,
            distill_needs_target,
        ),
        JobKind(
            "distill-train",
            "fine-tune a student on a distill dataset (config file in the import folder)",
            DistillTrainParams,
            Permission.DISTILL,
            run_distill_train,
        ),
        JobKind(
            "distill-eval",
            "bench a run's exported student against its base model on the same questions",
            DistillEvalParams,
            Permission.DISTILL,
            run_distill_eval,
        ),
    )
}


def runners_for(state: AppState) -> dict[str, JobRunner]:
    """Runners bound to ``state``: each parses its job's params and runs the kind."""

    def bind(kind: JobKind) -> JobRunner:
        def runner(context: JobContext) -> dict[str, Any]:
            return kind.run(state, context, kind.params.model_validate(context.params))

        return runner

    return {name: bind(kind) for name, kind in state.job_kinds.items()}
