"""``almanac kb extract``: knowledge from documents into the knowledge base (SIE).

almanac kb extract FILE... [--database NAME] [--dry-run] [--activate] [--no-llm]
                   [--skip-covered-tables] [--json]
    FILE is a Markdown, text, HTML or PDF document (:mod:`kb.documents`). Each section is
    read by the describe tier's model (else the default tier's), and the glossary terms,
    metrics, rules, value mappings and taxonomies it states are checked against the profiled
    schema of ``--database`` (default: the configured target, ALMANAC_TARGET_NAME) and merged
    as candidates for the review queue (``--activate``: active at once).
    :mod:`agents.learn.documents`. An unchanged document is not read again; a changed one
    replaces what its old version gave. ``--dry-run`` reports without writing.

The writes are recorded in the audit log as made by ``cli:<login>``. A refused document
(unreadable or encrypted PDF, empty, over 20 MB, binary, unsupported) or an unprofiled
database exits with 2 and writes nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from server.audit import cli_actor
from server.settings import Settings

EXTRACT_ACTION = "extract"


def add_extract_command(kb_actions: Any) -> None:
    """Register ``extract`` under ``almanac kb``."""
    command = kb_actions.add_parser(
        EXTRACT_ACTION, help="extract knowledge from Markdown, text, HTML or PDF documents"
    )
    command.add_argument("files", type=Path, nargs="+", help="the documents")
    command.add_argument("--database", help="the database they are about (default the target)")
    command.add_argument("--dry-run", action="store_true", help="report, write nothing")
    command.add_argument("--activate", action="store_true", help="activate the candidates")
    command.add_argument(
        "--no-llm", action="store_true", help="the table pass only (rows keyed by stored values)"
    )
    command.add_argument(
        "--skip-covered-tables",
        action="store_true",
        help="no model call for a table section the table pass covered row by row",
    )
    command.add_argument("--json", action="store_true", help="print the JSON report")


def run_extract_command(
    args: argparse.Namespace, settings: Settings, *, extractor: Any = None
) -> int:
    """Run the command; ``extractor`` replaces the configured model (tests)."""
    from tqdm import tqdm

    from agents.learn.documents import ExtractionError, LLMSectionExtractor, extract_documents
    from kb.documents import DocumentError, read_document
    from kb.engine import create_store_engine
    from kb.store import KnowledgeStore
    from kb.target.database import Database
    from server.audit import AuditLog

    try:
        documents = [read_document(path) for path in args.files]
        if extractor is None and not args.no_llm:
            extractor = LLMSectionExtractor(_model(settings))
        database = args.database or settings.resolved_target_name
        if database is None:
            raise ExtractionError("say which database (--database, or ALMANAC_TARGET_NAME)")
        # the target checks values that are no enum, as the extract job does
        url = settings.target_url if database == settings.resolved_target_name else None
        with (
            KnowledgeStore(settings.resolved_store_url) as store,
            Database(url) if url else contextlib.nullcontext() as target,
            tqdm(desc="extracting", unit="part", disable=args.json) as bar,
        ):

            def progress(done: int, total: int, name: str) -> None:
                bar.total = total
                bar.set_postfix_str(name)
                bar.update(done - bar.n)

            report = extract_documents(
                store,
                documents,
                extractor,
                database=database,
                target=target,
                dry_run=args.dry_run,
                activate=args.activate,
                skip_covered_tables=args.skip_covered_tables,
                by=cli_actor(),
                progress=progress,
            )
            if report.written_ids and not args.dry_run:
                engine = create_store_engine(settings.resolved_store_url)
                try:
                    detail = {"by": cli_actor(), **report.audit_detail()}
                    AuditLog(engine).record(
                        EXTRACT_ACTION,
                        None,
                        report.written_ids,
                        store_version=report.store_version,
                        detail=detail,
                    )
                finally:
                    engine.dispose()
    except (DocumentError, ExtractionError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    data = report.to_dict()
    print(json.dumps(data, indent=2, sort_keys=True) if args.json else _text(report, data))
    return 0


def _model(settings: Settings) -> Any:
    from server.llm_factory import LLMTiers
    from server.metrics import Metrics

    return LLMTiers(settings.llm_tiers, settings.data_dir, Metrics()).get(settings.describe_tier)


def _text(report: Any, data: dict[str, Any]) -> str:
    lines = [report.summary()]
    for document in data["documents"]:
        lines.append(f"  {document['file']}: {document['status']} ({document['parts']} parts)")
    if data["extracted"]:
        lines.append(f"  extracted: {data['extracted']}")
    if data["dropped"]:
        lines.append(f"  dropped by the schema check: {data['dropped']}")
    for failed in data["failed_parts"]:
        lines.append(f"  failed: {failed['document']} {failed['locator']}: {failed['error']}")
    return "\n".join(lines)
