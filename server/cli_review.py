"""``almanac kb review``: the review queue of learned knowledge from the command line.

almanac kb review list [--type T] [--job JOB] [--reason R] [--database DB] [--limit N]
                       [--offset N] [--json]
    entries waiting for review (mined candidates, entries a rollback took back, entries
    deactivated for their blame), newest first
almanac kb review show ID [--json]     one, with the experiences it was learned from
almanac kb review approve ID... [--json]
    activate them (``ask`` uses them from now on)
almanac kb review reject ID... [--reason TEXT] [--json]
    keep them inactive for good (re-mining does not add them again)
almanac kb review rollback JOB_ID [--json]
    deactivate everything mining job JOB_ID activated

The command has system access (every workspace, like a key without one) and records each
decision in the audit log as made by ``cli:<login>``. It exits with 2 and names the id when
an entry is unknown or not waiting for review; the entries before it are decided.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from server.audit import cli_actor
from server.settings import Settings

REVIEW_ACTION = "review"
REASONS = ("candidate", "rolled_back", "gate_rejected", "blamed")


def add_review_command(kb_actions: Any) -> None:
    """Register ``review`` under ``almanac kb``."""
    review = kb_actions.add_parser("review", help="the review queue of learned knowledge")
    steps = review.add_subparsers(dest="step", required=True)
    listing = steps.add_parser("list", help="entries waiting for review")
    listing.add_argument("--type", action="append", help="UKF type (repeat for several)")
    listing.add_argument("--job", help="only entries mined by this job")
    listing.add_argument("--reason", choices=REASONS)
    listing.add_argument("--database")
    listing.add_argument("--limit", type=int, default=50)
    listing.add_argument("--offset", type=int, default=0)
    steps.add_parser("show", help="one entry with its source experiences").add_argument("id")
    steps.add_parser("approve", help="activate entries").add_argument("ids", nargs="+")
    reject = steps.add_parser("reject", help="keep entries inactive for good")
    reject.add_argument("ids", nargs="+")
    reject.add_argument("--reason", default="", help="why (kept with the decision)")
    steps.add_parser("rollback", help="take back what a mining job activated").add_argument(
        "job_id"
    )
    for step in steps.choices.values():
        step.add_argument("--json", action="store_true", help="print JSON")


def run_review_command(args: argparse.Namespace, settings: Settings) -> int:
    from agents.learn.review_queue import QueueFilter, ReviewQueue, ReviewQueueError
    from kb.engine import create_store_engine
    from kb.store import KnowledgeStore
    from server.audit import AuditLog

    reviewer = cli_actor()
    with KnowledgeStore(settings.resolved_store_url) as store:
        engine = create_store_engine(settings.resolved_store_url)
        audit, queue = AuditLog(engine), ReviewQueue(store)

        def record(action: str, ids: list[str], detail: dict[str, Any]) -> None:
            audit.record(
                action, None, ids, store_version=store.version, detail={"by": reviewer, **detail}
            )

        try:
            if args.step == "list":
                flt = QueueFilter(args.type, args.job, args.reason, args.database)
                items, total = queue.waiting(
                    workspace=None, flt=flt, limit=args.limit, offset=args.offset
                )
                rows = [item.to_dict() for item in items]
                _print(args, {"total": total, "items": rows}, _list_text(rows, total))
            elif args.step == "show":
                item = queue.get(args.id, workspace=None).to_dict(detail=True)
                _print(args, item, _show_text(item))
            elif args.step == "rollback":
                ids = queue.rollback(args.job_id, reviewer, workspace=None)
                record("review.rollback", ids, {"job_id": args.job_id})
                text = f"rolled back {len(ids)} entries of job {args.job_id}"
                _print(args, {"job_id": args.job_id, "rolled_back": ids}, text)
            else:
                decided = []
                for uid in args.ids:
                    if args.step == "approve":
                        entry = queue.approve(uid, reviewer, workspace=None)
                    else:
                        entry = queue.reject(uid, reviewer, workspace=None, reason=args.reason)
                    record(f"review.knowledge.{args.step}", [uid], {"type": entry.type})
                    decided.append(entry.id)
                past = "approved" if args.step == "approve" else "rejected"
                _print(args, {past: decided}, f"{past} {len(decided)} entries")
        except ReviewQueueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        finally:
            engine.dispose()
    return 0


def _print(args: argparse.Namespace, data: dict[str, Any], text: str) -> None:
    print(json.dumps(data, indent=2, sort_keys=True, default=str) if args.json else text)


def _list_text(rows: list[dict[str, Any]], total: int) -> str:
    lines = [f"{total} entries waiting for review"]
    for row in rows:
        why = ",".join(row["reasons"])
        lines.append(
            f"{row['id']}  {row['type']:<10} {why:<12} {row['job_id'] or '-':<14} "
            f"{row['content'] or row['name']}"
        )
    return "\n".join(lines)


def _show_text(item: dict[str, Any]) -> str:
    lines = [
        f"{item['id']}  {item['type']} {item['name']!r}",
        f"  {item['content']}",
        f"  waiting: {', '.join(item['reasons'])}; job {item['job_id']}, miner {item['miner']}, "
        f"trust {item['trust']}, how {item['how']}",
        f"  database {item['database']}, workspace {item['workspace']}, owner {item['owner']}",
    ]
    if item["review"]:
        lines.append(f"  review: {json.dumps(item['review'], sort_keys=True)}")
    for source in item["sources"]:
        if source.get("question"):
            lines.append(f"  from {source['id']}: {source['question']!r}  →  {source['sql']}")
        else:
            lines.append(f"  from {source['id']} (not found)")
    return "\n".join(lines)
