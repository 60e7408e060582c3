"""``almanac mine``: knowledge learned from the query log, as candidates.

almanac mine [--labeled] [--unlabeled] [--since VERSION] [--db URL] [--name NAME] [--llm]
             [--rerun] [--dry-run] [--gate [--gate-held N] [--gate-batch N]] [--json]
    ``--labeled``: mine the labeled (and verified) experiences of the knowledge base (written after
    store version VERSION) into candidate synonyms, predicates, metrics and join paths;
    values are checked against the profile and, read-only, against the target database
    (``--db``, else the configured or last ``init`` target, when there is one); ``--llm``
    pairs what alignment cannot with the describe (else default) LLM tier; ``--rerun``
    skips experiences whose SQL fails on the target (the schema changed). Candidates
    are not used by ``ask`` until activated. ``--gate`` then runs the regression gate on
    the new candidates (:mod:`server.mine_gate`: up to N verified questions, default 60,
    replayed with the configured ask tiers on a scratch copy; needs the target): those that
    break no held question are activated, the others rejected. Prints the mining report
    and the gate's summary (``--json``: the mining report with the gate's under "gate").
    ``--unlabeled``: mine the unlabeled questions, each asked again with the ask tiers'
    default model (``ALMANAC_JOBS__MINE_VOTE_*`` samples and thresholds,
    :mod:`server.mine_vote`; needs the target) and mined where the vote is sure; both flags:
    labeled first (``--json``: the unlabeled report under "unlabeled").
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from server.settings import Settings

if TYPE_CHECKING:
    from agents.learn.gate import GateReport
    from agents.learn.mine.labeled import MiningReport

MINE_COMMANDS = frozenset({"mine"})


def add_mine_commands(commands: Any) -> None:
    mine = commands.add_parser("mine", help="mine the query log into candidate knowledge")
    mine.add_argument("--labeled", action="store_true", help="mine labeled experiences")
    mine.add_argument(
        "--unlabeled",
        action="store_true",
        help="mine unlabeled questions where the vote is sure (asks each again: slow)",
    )
    mine.add_argument("--since", type=int, help="only experiences written after this version")
    mine.add_argument("--db", help="target database URL, to check mined values")
    mine.add_argument("--name", help="its [DATABASE:...] name")
    mine.add_argument("--llm", action="store_true", help="pair leftover phrases with the LLM")
    mine.add_argument(
        "--rerun", action="store_true", help="skip experiences whose SQL fails on the target"
    )
    mine.add_argument("--dry-run", action="store_true", help="report without writing")
    mine.add_argument(
        "--gate", action="store_true", help="activate the candidates that pass the regression gate"
    )
    mine.add_argument("--gate-held", type=int, default=60, help="held questions at most")
    mine.add_argument("--gate-batch", type=int, default=8, help="candidates decided together")
    mine.add_argument(
        "--template-support",
        type=int,
        help="fewest labeled questions sharing one slotted SQL that make a query template"
        " (default: the miner's, 2; 0: no templates)",
    )
    mine.add_argument("--json", action="store_true", help="print the report as JSON")


def run_mine_command(args: argparse.Namespace, settings: Settings) -> int:
    from kb.store import KnowledgeStore
    from kb.target.database import Database

    if not (args.labeled or args.unlabeled):
        print("say what to mine: --labeled, --unlabeled or both")
        return 2
    targets: dict[str, Database] = {}
    url_and_name = _target(args, settings)
    for flag, wanted in (("--gate", args.gate), ("--unlabeled", args.unlabeled)):
        if wanted and url_and_name is None:
            print(f"{flag} needs the target database: pass --db URL (or run init)")
            return 2
    if args.gate and (args.gate_held < 1 or args.gate_batch < 1):
        print(f"--gate-held and --gate-batch must be >= 1: {args.gate_held}, {args.gate_batch}")
        return 2
    gate: GateReport | None = None
    reports: list[MiningReport] = []
    with KnowledgeStore(settings.resolved_store_url) as store:
        if url_and_name is not None:
            targets[url_and_name[1]] = Database(url_and_name[0])
        try:
            pairer = _pairer(settings) if args.llm else None
            if args.labeled:
                reports.append(_labeled(args, store, targets, pairer))
            if args.unlabeled:
                assert url_and_name is not None
                reports.append(_unlabeled(args, settings, store, targets, url_and_name[1], pairer))
            candidate_ids = [uid for r in reports for uid in r.candidate_ids]
            if args.gate and not args.dry_run and candidate_ids:
                assert url_and_name is not None
                gate = _gate(args, settings, store, candidate_ids, targets, url_and_name[1])
        finally:
            for database in targets.values():
                database.close()
    if args.json:
        out = reports[0].to_dict()
        if len(reports) > 1:
            out["unlabeled"] = reports[1].to_dict()
        out |= {"gate": gate.to_dict()} if gate is not None else {}
        print(json.dumps(out, indent=2, sort_keys=True))
        return 0
    for report in reports:
        _print(report)
    if gate is not None:
        from server.mine_gate import summary

        print("\n".join(summary(gate)))
    return 0


def _labeled(args: argparse.Namespace, store: Any, targets: dict[str, Any], pairer: Any) -> Any:
    from server.mine_run import run_mining, select_experiences

    experiences, _ = select_experiences(store, since_version=args.since)
    history = None if args.since is None else select_experiences(store)[0]
    return run_mining(
        store,
        experiences,
        targets=targets,
        pairer=pairer,
        rerun=args.rerun,
        apply=not args.dry_run,
        habits_over=history,  # preferences are shares of the whole history
        template_support=args.template_support,
    )


def _unlabeled(
    args: argparse.Namespace,
    settings: Settings,
    store: Any,
    targets: dict[str, Any],
    name: str,
    pairer: Any,
) -> Any:
    """Vote on the target's unlabeled questions with the ask tiers and mine the sure ones."""
    from tqdm import tqdm

    from agents.learn.mine.unlabeled import mine_unlabeled, unlabeled_experiences
    from server.confidence import calibrator_source
    from server.mine_vote import vote_asker, vote_thresholds
    from server.state import configured_indices

    experiences = unlabeled_experiences(store, since=args.since, database=name)
    retriever = configured_indices(store, settings).retriever()
    asker = vote_asker(
        ask_tiers(settings),
        store=store,
        retriever=retriever,
        database=targets[name],
        database_name=name,
        options=_pipeline_options(settings),
        calibrators=calibrator_source(settings),
    )
    with tqdm(total=len(experiences), desc="voting", unit="q", disable=args.json) as bar:

        def step(done: int, _total: int) -> None:
            bar.update(done - bar.n)

        return mine_unlabeled(
            store,
            experiences,
            ask=asker,
            thresholds=vote_thresholds(settings.jobs),
            pairer=pairer,
            targets=targets,
            databases=[name],
            apply=not args.dry_run,
            progress=step,
        )


def _print(report: MiningReport) -> None:
    print(
        f"mined {report.mined_experiences}/{report.experiences} {report.miner} experiences in "
        f"{report.seconds:.1f} s: {dict(report.mined) or 'nothing'}"
    )
    if report.vote is not None:
        from server.mine_vote import describe_vote

        print(describe_vote(report.vote))
    print(f"merge: {report.merge or 'nothing'}; {len(report.candidate_ids)} new candidate(s)")
    if report.dropped:
        print(f"dropped: {dict(report.dropped)}")
    for skipped in report.skipped:
        print(f"skipped {skipped['experience_id']}: {skipped['reason']}")


def _pipeline_options(settings: Settings) -> Any:
    from agents.pipeline_options import PipelineOptions

    return PipelineOptions(
        feedback_agreement=settings.feedback_agreement,
        blame_threshold=settings.blame_threshold,
    )


def _gate(
    args: argparse.Namespace,
    settings: Settings,
    store: Any,
    candidate_ids: list[str],
    targets: dict[str, Any],
    name: str,
) -> GateReport:
    """The regression gate on the new candidates, with the ask tiers and the embedder the
    server would use (no server here: the LLM calls take no turns)."""
    from server.mine_gate import run_gate
    from server.state import configured_embedder

    options = _pipeline_options(settings)
    return run_gate(
        store,
        candidate_ids,
        tiers=ask_tiers(settings),
        database=targets[name],
        database_name=name,
        embedder=configured_embedder(settings),
        held=args.gate_held,
        batch=args.gate_batch,
        options=options,
    )


def ask_tiers(settings: Settings) -> list[Any]:
    """The tiers ``ask`` uses (the cascade's, else the default one), as ``ModelTier``s."""
    from agents.pipeline import ModelTier
    from server.llm_factory import LLMTiers
    from server.metrics import Metrics

    tiers = LLMTiers(settings.llm_tiers, settings.data_dir, Metrics())
    return [ModelTier(n, tiers.get(n)) for n in (settings.cascade_tiers or [tiers.default])]


def _target(args: argparse.Namespace, settings: Settings) -> tuple[str, str] | None:
    from server.cli_agents import resolve_target

    try:
        return resolve_target(args, settings)
    except ValueError:
        return None  # no target: values not profiled as enums stay unchecked


def _pairer(settings: Settings) -> Any:
    from server.llm_factory import LLMTiers
    from server.metrics import Metrics
    from server.mine_run import tier_pairer

    return tier_pairer(LLMTiers(settings.llm_tiers, settings.data_dir, Metrics()), settings)
