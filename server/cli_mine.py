"""``almanac mine``: knowledge learned from the query log, as candidates.

almanac mine --labeled [--since VERSION] [--db URL] [--name NAME] [--llm] [--rerun]
             [--dry-run] [--json]
    mine the labeled (and verified) experiences of the knowledge base (written after
    store version VERSION) into candidate synonyms, predicates, metrics and join paths;
    values are checked against the profile and, read-only, against the target database
    (``--db``, else the configured or last ``init`` target, when there is one); ``--llm``
    pairs what alignment cannot with the describe (else default) LLM tier; ``--rerun``
    skips experiences whose SQL fails on the target (the schema changed). Candidates
    are not used by ``ask`` until activated. Prints the mining report.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from server.settings import Settings

MINE_COMMANDS = frozenset({"mine"})


def add_mine_commands(commands: Any) -> None:
    mine = commands.add_parser("mine", help="mine the query log into candidate knowledge")
    mine.add_argument(
        "--labeled", action="store_true", required=True, help="mine labeled experiences"
    )
    mine.add_argument("--since", type=int, help="only experiences written after this version")
    mine.add_argument("--db", help="target database URL, to check mined values")
    mine.add_argument("--name", help="its [DATABASE:...] name")
    mine.add_argument("--llm", action="store_true", help="pair leftover phrases with the LLM")
    mine.add_argument(
        "--rerun", action="store_true", help="skip experiences whose SQL fails on the target"
    )
    mine.add_argument("--dry-run", action="store_true", help="report without writing")
    mine.add_argument("--json", action="store_true", help="print the report as JSON")


def run_mine_command(args: argparse.Namespace, settings: Settings) -> int:
    from kb.store import KnowledgeStore
    from kb.target.database import Database
    from server.job_mine import run_mining, select_experiences

    targets: dict[str, Database] = {}
    url_and_name = _target(args, settings)
    with KnowledgeStore(settings.resolved_store_url) as store:
        if url_and_name is not None:
            targets[url_and_name[1]] = Database(url_and_name[0])
        try:
            experiences, _ = select_experiences(store, since_version=args.since)
            report = run_mining(
                store,
                experiences,
                targets=targets,
                pairer=_pairer(settings) if args.llm else None,
                rerun=args.rerun,
                apply=not args.dry_run,
            )
        finally:
            for database in targets.values():
                database.close()
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, sort_keys=True))
        return 0
    print(
        f"mined {report.mined_experiences}/{report.experiences} labeled experiences in "
        f"{report.seconds:.1f} s: {dict(report.mined) or 'nothing'}"
    )
    print(f"merge: {report.merge or 'nothing'}; {len(report.candidate_ids)} new candidate(s)")
    if report.dropped:
        print(f"dropped: {dict(report.dropped)}")
    for skipped in report.skipped:
        print(f"skipped {skipped['experience_id']}: {skipped['reason']}")
    return 0


def _target(args: argparse.Namespace, settings: Settings) -> tuple[str, str] | None:
    from server.cli_agents import resolve_target

    try:
        return resolve_target(args, settings)
    except ValueError:
        return None  # no target: values not profiled as enums stay unchecked


def _pairer(settings: Settings) -> Any:
    from server.job_mine import tier_pairer
    from server.llm_factory import LLMTiers
    from server.metrics import Metrics

    return tier_pairer(LLMTiers(settings.llm_tiers, settings.data_dir, Metrics()), settings)
