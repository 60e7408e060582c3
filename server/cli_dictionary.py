"""``almanac kb dictionary``: attach a data dictionary's descriptions to the knowledge base.

almanac kb dictionary FILE [--database NAME] [--dry-run] [--overwrite] [--json]
    FILE is a CSV/TSV, JSON or YAML data dictionary, or Spider's tables.json
    (:mod:`kb.dictionary.read`). Each description and synonym goes onto its Table or Column
    entry of the profiled database (:mod:`kb.dictionary.apply`); unknown tables and columns
    are listed, not written; a description from elsewhere is kept (and listed) unless
    ``--overwrite``. Records that name no database are about ``--database``, else the
    configured target (ALMANAC_TARGET_NAME); with ``--database``, records naming another
    database are left out. ``--dry-run`` reports without writing.

The writes are recorded in the audit log as made by ``cli:<login>``. A refused dictionary
(unreadable, empty, over 20 MB, binary, malformed, no profiled database) exits with 2 and
writes nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from server.audit import cli_actor
from server.settings import Settings

DICTIONARY_ACTION = "dictionary"
MISSING_SHOWN = 10


def add_dictionary_command(kb_actions: Any) -> None:
    """Register ``dictionary`` under ``almanac kb``."""
    command = kb_actions.add_parser(
        DICTIONARY_ACTION, help="attach a data dictionary's descriptions to tables and columns"
    )
    command.add_argument("file", type=Path, help="CSV, JSON, YAML or Spider tables.json")
    command.add_argument("--database", help="database of records that name none")
    command.add_argument("--dry-run", action="store_true", help="report, write nothing")
    command.add_argument(
        "--overwrite", action="store_true", help="replace descriptions from other sources"
    )
    command.add_argument("--json", action="store_true", help="print the JSON report")


def run_dictionary_command(args: argparse.Namespace, settings: Settings) -> int:
    from kb.dictionary import DictionaryError, apply_dictionary, read_dictionary
    from kb.engine import create_store_engine
    from kb.store import KnowledgeStore
    from server.audit import AuditLog

    try:
        dictionary = read_dictionary(args.file)
        database = args.database
        if database is None and None in dictionary.databases():
            database = settings.resolved_target_name
        with KnowledgeStore(settings.resolved_store_url) as store:
            report = apply_dictionary(
                store,
                dictionary,
                database=database,
                dry_run=args.dry_run,
                overwrite=args.overwrite,
            )
            if report.written_ids and not args.dry_run:
                engine = create_store_engine(settings.resolved_store_url)
                try:
                    detail = {"by": cli_actor(), **_audit_detail(report.to_dict())}
                    AuditLog(engine).record(
                        DICTIONARY_ACTION,
                        None,
                        report.written_ids,
                        store_version=report.store_version,
                        detail=detail,
                    )
                finally:
                    engine.dispose()
    except DictionaryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    data = report.to_dict()
    print(
        json.dumps(data, indent=2, sort_keys=True) if args.json else _text(report.summary(), data)
    )
    return 0


def _audit_detail(report: dict[str, Any]) -> dict[str, Any]:
    keys = ("file", "sha256", "databases", "matched", "written", "unchanged", "retracted")
    return {key: report[key] for key in keys}


def _text(summary: str, report: dict[str, Any]) -> str:
    lines = [summary]
    for record in report["unknown_records"]:
        subject = record.get("column") or record.get("table")
        lines.append(f"  unknown {subject} of {record['database']} ({record['record']})")
    for kept in report["kept"]:
        lines.append(
            f"  kept the description of {kept['subject']} ({kept['record']}): "
            f"{kept['kept']!r}, not {kept['dictionary']!r} (--overwrite replaces it)"
        )
    missing = report["missing_databases"]
    if missing:
        more = ", ..." if len(missing) > MISSING_SHOWN else ""
        shown = ", ".join(missing[:MISSING_SHOWN]) + more
        lines.append(f"  {len(missing)} databases of the dictionary not profiled here: {shown}")
    return "\n".join(lines)
