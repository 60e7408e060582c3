"""``almanac kb cot``: checked CoT for the verified experiences that have none yet.

almanac kb cot [--database NAME] [--tier NAME] [--limit N] [--retry-failed] [--with-knowledge]
               [--dry-run] [--json]
    Each labeled or verified experience of the knowledge base (of ``--database``, default the
    configured target's, else every database) without a passing CoT for its SQL gets a
    step-by-step explanation from the teacher tier (``--tier``, default the default LLM tier),
    checked against its SQL and retried once with the checker's reasons
    (:mod:`agents.learn.cot`). ``--limit N`` asks about at most N experiences;
    ``--retry-failed`` asks again where this model failed before; ``--with-knowledge`` shows
    the teacher the knowledge behind filters a question does not name
    (:mod:`agents.learn.cot.knowledge`; off by default: with the 1.5B as teacher it lowered
    AutoFin's pass share, 26 % against 38 %); ``--dry-run`` reports without writing. A
    progress bar shows the experiences explained; the report (``--json``: as JSON) says how
    many passed, failed (by reason) and were skipped. Interrupted (Ctrl-C), what was done is
    kept and a new run goes on from there.

The writes are recorded in the audit log as made by ``cli:<login>``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from server.audit import cli_actor
from server.settings import Settings

COT_ACTION = "cot"


def add_cot_command(kb_actions: Any) -> None:
    """Register ``cot`` under ``almanac kb``."""
    command = kb_actions.add_parser(
        COT_ACTION, help="explain verified SQL step by step with the teacher LLM (checked CoT)"
    )
    command.add_argument("--database", help="[DATABASE:...] name; default the target's")
    command.add_argument("--tier", help="the teacher LLM tier; default the default tier")
    command.add_argument("--limit", type=int, help="ask about at most N experiences")
    command.add_argument(
        "--retry-failed", action="store_true", help="ask again where this model failed before"
    )
    command.add_argument(
        "--with-knowledge",
        action="store_true",
        help="also show the teacher the knowledge behind filters the question does not name",
    )
    command.add_argument("--dry-run", action="store_true", help="report, write nothing")
    command.add_argument("--json", action="store_true", help="print the JSON report")


def run_cot_command(args: argparse.Namespace, settings: Settings, *, llm: Any = None) -> int:
    """Run ``almanac kb cot``; ``llm`` replaces the configured teacher tier (tests)."""
    from tqdm import tqdm

    from agents.learn.cot import CotWriter, cot_experiences, profile_cot
    from agents.llm.base import Cancellation, LLMCancelledError, cancellation_scope
    from kb.store import KnowledgeStore

    if args.limit is not None and args.limit < 1:
        print(f"--limit must be >= 1, got {args.limit}", file=sys.stderr)
        return 2
    try:
        teacher = llm if llm is not None else _teacher(settings, args.tier)
    except KeyError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 2
    database = args.database or settings.resolved_target_name
    token = Cancellation()
    with KnowledgeStore(settings.resolved_store_url) as store:
        experiences = cot_experiences(store, database=database)
        with tqdm(total=0, desc="explaining", unit="sql", disable=args.json) as bar:

            def step(done: int, total: int) -> None:
                bar.total = total
                bar.update(done - bar.n)

            try:
                with cancellation_scope(token):
                    report = profile_cot(
                        store,
                        experiences,
                        CotWriter(teacher),
                        retry_failed=args.retry_failed,
                        with_knowledge=args.with_knowledge,
                        limit=args.limit,
                        apply=not args.dry_run,
                        progress=step,
                        cancellation=token,
                    )
            except KeyboardInterrupt:
                token.cancel("interrupted")
                print("interrupted: what was explained is kept", file=sys.stderr)
                return 130
            except LLMCancelledError as exc:
                print(f"stopped: {exc}", file=sys.stderr)
                return 130
        if report.written_ids:
            _audit(settings, report)
    data = report.to_dict()
    print(json.dumps(data, indent=2, sort_keys=True) if args.json else _text(data, report))
    return 0


def _teacher(settings: Settings, tier: str | None) -> Any:
    from server.llm_factory import LLMTiers
    from server.metrics import Metrics

    return LLMTiers(settings.llm_tiers, settings.data_dir, Metrics()).get(tier)


def _audit(settings: Settings, report: Any) -> None:
    from kb.engine import create_store_engine
    from server.audit import AuditLog

    engine = create_store_engine(settings.resolved_store_url)
    try:
        AuditLog(engine).record(
            COT_ACTION,
            None,
            report.written_ids,
            store_version=report.store_version,
            detail={"by": cli_actor(), "model": report.model, "passed": report.passed},
        )
    finally:
        engine.dispose()


def _text(data: dict[str, Any], report: Any) -> str:
    lines = [report.summary()]
    for failure in data["failures"]:
        lines.append(f"  failed {failure['experience_id']}: {'; '.join(failure['reasons'])}")
    return "\n".join(lines)
