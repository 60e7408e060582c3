"""``extract_documents``: documents → checked candidate knowledge, merged into the store.

For each document (:mod:`kb.documents`), its tables are read first without the model
(:mod:`agents.learn.documents.tables`: rows keyed by a stored value, glossaries), and the
reporting calendar its sections state (:mod:`.calendar_pass`: fiscal year, publication day,
to-date columns, as the calendar facts the RAG agent resolves "this month" with); then each
section (cut into parts the model can read, :mod:`agents.learn.documents.parts`) is read by
the model (:mod:`.extractor`) and its items built into checked UKF entries (:mod:`.build`).
The entries go through :func:`kb.merge.merge_mined` as candidates, as mined entries do (the
review queue lists them; ``activate=True`` activates the inserted ones at once, for benches).

- **Idempotent**: a document whose content hash is the one its last complete extraction had
  is skipped: no model call, no write (:mod:`agents.learn.documents.checkpoint`).
- **Replace on change**: a new version's entries replace what the old version gave: old
  entries the new version does not give again (same id and content) are taken off first
  (:mod:`.retract`): a candidate never activated is purged, an activated one deactivated
  (kept with its history, back in the review queue), and one other documents gave too only
  loses this document as a parent; those kept inactive are not seen by the merge, so they
  never conflict with the new ones.
- **Resumable**: after each section part the checkpoint is written (not in a dry run); a run
  stopped half-way and started again does not ask the model about the parts already read.
- **Failures**: a part the model answers with garbage is counted as failed (with the error)
  and the rest goes on; it is not asked again for that version.
- **Cancellable**: ``cancellation`` (default: the current token) is checked before each call.
- **Without the model**: ``extractor=None`` gives the table pass only (its parts are marked
  ``no_llm`` and read by the model on a later run that has one); ``skip_covered_tables``
  does not ask the model about a section made only of tables the table pass fully covered.
- **Structured sections** (:mod:`.structured`: rule lists, metric sections) are read without
  the model, and a section the pass read whole is not given to the model (``structured``).
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from agents.learn.documents.build import (
    GLOSSARY_COLLECTION,
    Built,
    Origin,
    build_entries,
    metric_names,
)
from agents.learn.documents.calendar_pass import calendar_pass
from agents.learn.documents.checkpoint import document_entry, document_id, stored_state
from agents.learn.documents.extractor import SectionExtractor, SectionFailed
from agents.learn.documents.glossary_links import glossary_index, with_glossary_synonyms
from agents.learn.documents.parts import schema_text, section_parts
from agents.learn.documents.retract import merge_view, retract
from agents.learn.documents.stored import stored_glossary, stored_metric_names
from agents.learn.documents.structured import StructuredPass, structured_pass
from agents.learn.documents.tables import TablePass, TableStats, table_pass
from agents.learn.mine.candidates import activate as activate_ids
from agents.learn.mine.labeled import kind_of
from agents.learn.mine.schema_view import SchemaView
from agents.llm.base import Cancellation, current_cancellation
from kb.documents import Document
from kb.merge import merge_mined
from kb.store import KnowledgeStore
from kb.target.database import Database
from ukf import BaseUKF

MAX_PART_CHARS = 2500
Progress = Callable[[int, int, str], None]


class ExtractionError(ValueError):
    """Extraction cannot start (the database is not profiled); nothing was written."""


@dataclass
class ExtractionReport:
    """What one extraction run did (JSON-ready through :meth:`to_dict`)."""

    job_id: str
    database: str
    dry_run: bool = False
    documents: list[dict[str, Any]] = field(default_factory=list)
    parts: int = 0
    read_parts: int = 0
    resumed_parts: int = 0
    failed_parts: list[dict[str, str]] = field(default_factory=list)
    llm_calls: int = 0
    skipped_parts: Counter[str] = field(default_factory=Counter)
    tables: TableStats = field(default_factory=TableStats)
    extracted: Counter[str] = field(default_factory=Counter)
    dropped: Counter[str] = field(default_factory=Counter)
    unchecked_values: int = 0
    merge: dict[str, int] = field(default_factory=dict)
    candidate_ids: list[str] = field(default_factory=list)
    activated_ids: list[str] = field(default_factory=list)
    retracted_ids: list[str] = field(default_factory=list)
    deactivated_ids: list[str] = field(default_factory=list)
    """Of the retracted, those kept inactive (they had been activated)."""
    store_version: int | None = None
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["extracted"], data["dropped"] = dict(self.extracted), dict(self.dropped)
        data["skipped_parts"], data["tables"] = dict(self.skipped_parts), self.tables.to_dict()
        return data

    @property
    def written_ids(self) -> list[str]:
        return [*self.candidate_ids, *self.retracted_ids]

    def audit_detail(self) -> dict[str, Any]:
        """What the audit log records of the run's writes: the documents and the counts."""
        return {
            "files": [d["file"] for d in self.documents],
            "sha256": [d["sha256"] for d in self.documents],
            "database": self.database,
            "inserted": len(self.candidate_ids),
            "retracted": len(self.retracted_ids),
            "deactivated": len(self.deactivated_ids),
        }

    def summary(self) -> str:
        unchanged = sum(d["status"] == "unchanged" for d in self.documents)
        return (
            f"{len(self.documents)} document(s), {unchanged} unchanged; "
            f"{self.read_parts} part(s) read, {self.resumed_parts} resumed, "
            f"{len(self.failed_parts)} failed, {sum(self.skipped_parts.values())} skipped; "
            f"tables: {self.tables.rows_anchored} of {self.tables.rows_read} row(s) anchored; "
            f"extracted {sum(self.extracted.values())}, "
            f"dropped {sum(self.dropped.values())}; merge {self.merge}; "
            f"{len(self.retracted_ids)} retracted, {len(self.activated_ids)} activated"
        )


def extract_documents(
    store: KnowledgeStore,
    documents: Sequence[Document],
    extractor: SectionExtractor | None,
    *,
    database: str,
    job_id: str | None = None,
    target: Database | None = None,
    dry_run: bool = False,
    activate: bool = False,
    by: str = "system",
    max_part_chars: int = MAX_PART_CHARS,
    skip_covered_tables: bool = False,
    progress: Progress | None = None,
    cancellation: Cancellation | None = None,
) -> ExtractionReport:
    """Extract ``documents`` into ``store`` for ``database`` (see the module docstring).

    Args:
        extractor: reads one section part (an :class:`LLMSectionExtractor`, or a script);
            None: the table pass only.
        target: the read-only database, to check values not profiled as enums.
        dry_run: report without writing anything (no checkpoint either).
        activate: activate the inserted candidates at once (by ``by``).
        skip_covered_tables: no model call for a section of tables the table pass covered.
        progress: called with (parts done, parts in all, document name) after each part.

    Raises:
        ExtractionError: ``database`` has no profiled tables in ``store``.
    """
    started = time.perf_counter()
    report = ExtractionReport(job_id or uuid.uuid4().hex[:12], database, dry_run)
    view = SchemaView(store, database, target=target)
    if not view.profiled:
        raise ExtractionError(f"database {database!r} has no profiled tables in the store")
    token = cancellation if cancellation is not None else current_cancellation()
    plans = [_plan(store, d, database, max_part_chars, extractor is None) for d in documents]
    total = sum(len(p.todo) for p in plans)
    done = 0
    for plan in plans:
        if plan.unchanged:
            report.documents.append(plan.summary("unchanged"))
            continue
        origin_for = _origin_for(plan, report.job_id, database)
        plan.tables = table_pass(plan.document, view, origin_for)
        plan.structured = structured_pass(plan.document, view)
        plan.calendar = calendar_pass(plan.document, view, origin_for)
        for key, locator, text in plan.todo:
            skip = _skip(key, plan, extractor is None, skip_covered_tables)
            if key in plan.sections:
                report.resumed_parts += 1
            elif skip:
                plan.sections[key] = {"status": "skipped", "reason": skip}
                report.skipped_parts[skip] += 1
            else:
                assert extractor is not None
                if token is not None:
                    token.raise_if_cancelled("document extraction")
                plan.sections[key] = _read(
                    extractor, report, database, schema_text(view, text), plan, locator, text
                )
                if not dry_run:
                    store.upsert(plan.entry(complete=False))
            report.parts += 1
            done += 1
            if progress is not None:
                progress(done, total, plan.document.name)
        _finish(store, plan, view, report, dry_run=dry_run, activate=activate, by=by)
    report.store_version = store.version
    report.seconds = round(time.perf_counter() - started, 3)
    return report


@dataclass
class _Plan:
    document: Document
    database: str
    entry_id: str
    todo: list[tuple[str, str, str]]  # (checkpoint key, locator, text) per part
    sections: dict[str, dict[str, Any]]
    previous: list[str]  # ids the last complete version gave
    unchanged: bool
    job_id: str = ""
    gave: list[str] = field(default_factory=list)
    tables: TablePass = field(default_factory=TablePass)
    calendar: list[BaseUKF] = field(default_factory=list)
    structured: StructuredPass = field(default_factory=StructuredPass)

    def entry(self, *, complete: bool) -> BaseUKF:
        state = {
            "sha256": self.document.sha256,
            "path": self.document.path,
            "job_id": self.job_id,
            "complete": complete,
            "sections": self.sections,
            "entries": self.gave if complete else self.previous,
        }
        return document_entry(self.document, self.database, state)

    def summary(self, status: str, **more: Any) -> dict[str, Any]:
        return {
            "file": self.document.name,
            "path": self.document.path,
            "sha256": self.document.sha256,
            "status": status,
            "parts": len(self.todo),
            **more,
        }


def _plan(
    store: KnowledgeStore, document: Document, database: str, max_chars: int, no_llm: bool
) -> _Plan:
    entry_id = document_id(document, database)
    state = stored_state(store, entry_id)
    same = state.get("sha256") == document.sha256
    sections = dict(state.get("sections") or {}) if same else {}
    if not no_llm:  # the parts a run without the model left are read now
        sections = {k: v for k, v in sections.items() if v.get("reason") != NO_LLM}
    complete = bool(state.get("complete")) and len(sections) == len(state.get("sections") or {})
    todo = [
        (f"{i}.{j}:{section.locator}", section.locator, text)
        for i, section in enumerate(document.sections)
        for j, text in enumerate(section_parts(section, max_chars))
    ]
    previous = [str(i) for i in state.get("entries") or []]
    unchanged = same and complete
    todo = [] if unchanged else todo
    return _Plan(document, database, entry_id, todo, sections, previous, unchanged)


NO_LLM, TABLES_COVERED, STRUCTURED = "no_llm", "tables_covered", "structured"


def _skip(key: str, plan: _Plan, no_llm: bool, skip_covered: bool) -> str | None:
    """Why the part of checkpoint ``key`` is not read by the model (None: it is): a section
    the structured pass read whole (nothing is left in it for the model, which would only
    write the same rule or metric again), and with ``skip_covered`` one the table pass
    covered."""
    if no_llm:
        return NO_LLM
    section = int(key.split(".", 1)[0])
    if section in plan.structured.covered_sections:
        return STRUCTURED
    return TABLES_COVERED if skip_covered and section in plan.tables.covered_sections else None


def _origin_for(plan: _Plan, job_id: str, database: str) -> Callable[..., Origin]:
    """The :class:`Origin` of a section of ``plan``'s document by its locator (and, for the
    table pass, the table's and the row's number)."""

    def origin(locator: str, table: int | None = None, row: int | None = None) -> Origin:
        return Origin(job_id, database, plan.document, plan.entry_id, locator, table, row)

    return origin


def _read(
    extractor: SectionExtractor,
    report: ExtractionReport,
    database: str,
    schema: str,
    plan: _Plan,
    locator: str,
    text: str,
) -> dict[str, Any]:
    report.read_parts += 1
    report.llm_calls += 1
    try:
        items = extractor.extract(
            database=database,
            schema=schema,
            document=plan.document.name,
            locator=locator,
            text=text,
        )
    except SectionFailed as exc:
        return {"status": "failed", "error": str(exc)}
    return {"status": "done", "items": items}


def _finish(
    store: KnowledgeStore,
    plan: _Plan,
    view: SchemaView,
    report: ExtractionReport,
    *,
    dry_run: bool,
    activate: bool,
    by: str,
) -> None:
    plan.job_id = report.job_id
    built = Built(entries=[*plan.tables.entries, *plan.calendar])
    report.tables.add(plan.tables.stats)
    done = [s["items"] for s in plan.sections.values() if s.get("status") == "done"]
    known = metric_names(done) | stored_metric_names(store, view.database)
    known |= plan.structured.metric_names
    origin_for = _origin_for(plan, report.job_id, view.database)
    for locator, items in plan.structured.sections:
        part = build_entries(items, view, origin_for(locator), known)
        built.entries += part.entries
        built.dropped.update(part.dropped)
    for key, locator, _text in plan.todo:
        state = plan.sections.get(key) or {}
        if state.get("status") == "skipped":
            continue
        if state.get("status") != "done":
            failure = {"document": plan.document.name, "locator": locator}
            report.failed_parts.append({**failure, "error": str(state.get("error", ""))})
            continue
        part = build_entries(state["items"], view, origin_for(locator), known)
        built.entries += part.entries
        built.dropped.update(part.dropped)
        built.unchecked_values += part.unchecked_values
    entries = _unique(built.entries)
    glossary = [e for e in entries if e.type == "knowledge" and e.collection == GLOSSARY_COLLECTION]
    glossary += stored_glossary(store, view.database)
    entries = with_glossary_synonyms(entries, glossary_index(glossary))
    report.extracted.update(kind_of(e) for e in entries)
    report.dropped.update(built.dropped)
    report.unchecked_values += built.unchecked_values
    sha = plan.document.sha256
    retraction = retract(
        store, plan.entry_id, plan.previous, entries, sha256=sha, by=by, dry_run=dry_run
    )
    report.retracted_ids += retraction.ids
    report.deactivated_ids += retraction.deactivated
    entries = retraction.entries
    merged = merge_mined(
        merge_view(store, retraction), entries, apply=not dry_run, include_inactive=True
    )
    for action, count in merged.counts().items():
        report.merge[action] = report.merge.get(action, 0) + count
    inserted = [d.ukf_id for d in merged.of("inserted")]
    report.candidate_ids += inserted
    plan.gave = list(
        dict.fromkeys([*inserted, *(d.existing_id for d in merged.of("merged") if d.existing_id)])
    )
    if not dry_run:
        store.upsert(plan.entry(complete=True))
        if activate and inserted:
            report.activated_ids += activate_ids(store, inserted, by=by)
    report.documents.append(
        plan.summary(
            "extracted",
            entries=len(entries),
            inserted=len(inserted),
            retracted=len(retraction.ids),
            failed=sum(1 for f in report.failed_parts if f["document"] == plan.document.name),
        )
    )


def _unique(entries: list[BaseUKF]) -> list[BaseUKF]:
    """One entry per (id, content); the same fact from two sections once."""
    seen: dict[tuple[str, str], BaseUKF] = {}
    for entry in entries:
        seen.setdefault((entry.id, entry.content_hash), entry)
    return list(seen.values())
