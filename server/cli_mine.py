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
    from agents.learn.mine import labeled_experiences, mine_labeled
    from kb.store import KnowledgeStore
    from kb.target.database import Database

    targets: dict[str, Database] = {}
    url_and_name = _target(args, settings)
    with KnowledgeStore(settings.resolved_store_url) as store:
        if url_and_name is not None:
            targets[url_and_name[1]] = Database(url_and_name[0])
        try:
            experiences = labeled_experiences(store, since=args.since)
            report = mine_labeled(
                store,
                experiences,
                pairer=_pairer(settings) if args.llm else None,
                targets=targets,
                apply=not args.dry_run,
                rerun=args.rerun and bool(targets),
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
    from agents.learn.mine import LLMPairer
    from server.llm_factory import LLMTiers
    from server.metrics import Metrics

    tiers = LLMTiers(settings.llm_tiers, settings.data_dir, Metrics())
    return LLMPairer(tiers.get(settings.describe_tier or tiers.default))
