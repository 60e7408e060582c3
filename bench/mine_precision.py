"""Precision of labeled mining: what the miner learns from one split, checked on another.

    python -m bench.mine_precision [--dataset geoquery] [--mine-split train]
                                   [--audit-split test] [--worst 15] [--json]
    python -m bench.mine_precision --dataset spider_dev   # per database: 2/3 mined, 1/3 audited
    python -m bench.mine_precision --rounds 25           # mined 25 at a time, as a stream

Profiles the dataset's databases into a fresh knowledge store, mines the questions of
``--mine-split`` (question + gold SQL, labeled) deterministically with
:func:`agents.learn.mine.mine_labeled` (no LLM pairer; values checked read-only on the
target) and lists every candidate it inserted, by kind, with its *support* (the number of
source experiences) and an offline precision audit against the gold SQL of the
``--audit-split`` questions of the same database:

- a phrase entry (synonym, predicate, metric, comparison) is *triggered* by an audit question
  whose words (lemmas) hold the entry's phrase; it *agrees* when the gold SQL uses what the
  entry points to (the column, the table, the column with the value, every column of the
  formula, the threshold), else it *disagrees*;
- a join is triggered by an audit question whose gold SQL reads both tables; it agrees when
  the gold SQL joins them on the same columns, else it disagrees.

The table gives, per kind, the entries, those triggered, the trigger events and the share
of events that agree or disagree, then the entries that disagree most. This is the offline
proxy for "mined knowledge helps": an entry that disagrees is one that can mislead ``ask``.
A dataset without the two splits (Spider dev) is divided per database in the SHA-256 order
of the question ids: two thirds mined, one third audited.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agents.learn.mine import candidates, mine_labeled
from agents.learn.mine.labeled import MiningReport, kind_of
from agents.learn.mine.schema_view import SchemaView
from agents.learn.mine.usage import SqlUse, element_of, lemmas_of
from bench.datasets import load_dataset
from bench.datasets.example import Example
from bench.mine_throughput import experiences_of
from indices.normalize import Lemmatizer, default_lemmatizer
from kb.profile.profiler import ProfileOptions, profile_database
from kb.store import KnowledgeStore
from kb.target.database import Database
from ukf import BaseUKF


@dataclass
class Audited:
    """One mined entry and how the audit questions' gold SQL judges it."""

    kind: str
    name: str
    database: str
    support: int
    points_to: str
    triggered: int = 0
    agree: int = 0
    disagree: int = 0
    examples: list[str] = field(default_factory=list)  # audit questions that disagree


def split_examples(
    examples: list[Example], mine_split: str, audit_split: str
) -> tuple[list[Example], list[Example]]:
    """(mined, audited): the named splits, or per database 2/3 and 1/3 by hashed id."""
    mined = [e for e in examples if e.split == mine_split]
    audited = [e for e in examples if e.split == audit_split]
    if mined and audited:
        return mined, audited
    by_db: dict[str, list[Example]] = defaultdict(list)
    for example in examples:
        by_db[example.database].append(example)
    mined, audited = [], []
    for group in by_db.values():
        ranked = sorted(group, key=lambda e: hashlib.sha256(e.id.encode()).hexdigest())
        cut = len(ranked) // 3
        audited += ranked[:cut]
        mined += ranked[cut:]
    return mined, audited


def mine(
    examples: list[Example], urls: dict[str, str], folder: Path, *, rounds: int = 0
) -> tuple[KnowledgeStore, MiningReport]:
    """A profiled store of the databases with ``examples`` mined into it as candidates:
    at once, or (``rounds`` > 0) as a stream does, ``rounds`` experiences at a time, each
    stored before its round (the report is the last round's, with the drops summed)."""
    store = KnowledgeStore(f"sqlite:///{folder / 'store.db'}")
    for name, url in urls.items():
        with Database(url) as database:
            profile_database(
                database, store, database_name=name, options=ProfileOptions(progress=False)
            )
    targets = {n: Database(u) for n, u in urls.items()}
    experiences = experiences_of(examples)
    size = rounds or len(experiences)
    dropped: Counter[str] = Counter()
    try:
        for begin in range(0, len(experiences), size):
            chunk = experiences[begin : begin + size]
            if rounds:
                store.upsert_many(chunk)
            report = mine_labeled(
                store, chunk, lemmatizer=default_lemmatizer(), targets=targets, job_id="audit"
            )
            dropped.update(report.dropped)
    finally:
        for database in targets.values():
            database.close()
    report.dropped = dropped
    return store, report


def audit(store: KnowledgeStore, audited: list[Example], lemmatizer: Lemmatizer) -> list[Audited]:
    """Every candidate of ``store`` judged on the gold SQL of ``audited`` (same database)."""
    views: dict[str, SchemaView] = {}
    golds: dict[str, list[SqlUse]] = defaultdict(list)
    for example in audited:
        if example.database not in views:
            views[example.database] = SchemaView(store, example.database)
        use = SqlUse(example.question, example.gold_sql[0], views[example.database], lemmatizer)
        golds[example.database].append(use)
    columns = {
        e.id: (str(e.content_resources["table"]).casefold(), e.content_resources["column"].lower())
        for e in store.iterate(type="column")
    }
    found: list[Audited] = []
    for entry in candidates(store):
        database = next(iter(entry.tag_values("DATABASE")), "")
        row = Audited(
            kind_of(entry), entry.name, database, len(set(entry.parents)), _points_to(entry)
        )
        element = element_of(entry, columns)
        phrase = lemmas_of(entry.name, lemmatizer)
        for gold in golds.get(database, []) if element is not None else []:
            verdict = gold.judge(element, phrase)
            if verdict is None:
                continue
            row.triggered += 1
            row.agree += verdict
            row.disagree += not verdict
            if not verdict and len(row.examples) < 3:
                row.examples.append(gold.question)
        found.append(row)
    return found


def _points_to(entry: BaseUKF) -> str:
    r = entry.content_resources
    if isinstance(r.get("comparison"), dict):
        return str(r.get("condition") or r["comparison"].get("column"))
    return str(r.get("condition") or r.get("formula") or r.get("target_name") or entry.content)


def summary(rows: Iterable[Audited]) -> dict[str, dict[str, Any]]:
    """Per kind (and ``all``): entries, triggered entries, events, agree / disagree shares."""
    table: dict[str, dict[str, Any]] = {}
    rows = list(rows)
    for kind in [*sorted({r.kind for r in rows}), "all"]:
        mine_ = [r for r in rows if kind in ("all", r.kind)]
        events = sum(r.triggered for r in mine_)
        agree = sum(r.agree for r in mine_)
        table[kind] = {
            "entries": len(mine_),
            "triggered": sum(r.triggered > 0 for r in mine_),
            "events": events,
            "agree": round(agree / events, 3) if events else None,
            "disagree": round((events - agree) / events, 3) if events else None,
            "entries_mostly_wrong": sum(r.disagree > r.agree for r in mine_),
        }
    return table


def _print(rows: list[Audited], report: MiningReport, worst: int, heading: str) -> None:
    print(f"## {heading}")
    print(
        f"mined {report.mined_experiences}/{report.experiences} experiences, "
        f"{len(rows)} candidates in the store; mined by kind {dict(report.mined)}; "
        f"dropped {dict(report.dropped)}; merge {report.merge}; {report.seconds} s"
    )
    print("\n### entries (kind, support, triggered, agree, disagree, phrase → element)")
    for r in sorted(rows, key=lambda r: (r.kind, r.database, -r.support, r.name)):
        print(
            f"{r.kind:15} {r.support:3} {r.triggered:3} {r.agree:3} {r.disagree:3}  "
            f"{r.database}: {r.name!r} → {r.points_to}"
        )
    print("\n### audit per kind")
    print("| kind | entries | triggered | events | agree | disagree | mostly wrong |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for kind, s in summary(rows).items():
        shares = [f"{s[k]:.0%}" if s[k] is not None else "-" for k in ("agree", "disagree")]
        print(
            f"| {kind} | {s['entries']} | {s['triggered']} | {s['events']} | "
            f"{shares[0]} | {shares[1]} | {s['entries_mostly_wrong']} |"
        )
    bad = sorted((r for r in rows if r.disagree), key=lambda r: (-r.disagree, r.agree))
    print(f"\n### worst disagreeing entries (up to {worst})")
    for r in bad[:worst]:
        print(
            f"- {r.kind} {r.name!r} → {r.points_to} ({r.database}, support {r.support}): "
            f"{r.disagree} disagree / {r.agree} agree; e.g. {r.examples[0]!r}"
        )


def run(
    dataset: str, mine_split: str, audit_split: str, *, rounds: int = 0
) -> tuple[list[Audited], MiningReport]:
    options = {"drop_failing_gold": True} if dataset == "geoquery" else {}
    examples = load_dataset(dataset, **options).examples
    mined, audited = split_examples(examples, mine_split, audit_split)
    urls = {e.database: e.database_url for e in examples if e.database_url}
    with tempfile.TemporaryDirectory(prefix="mine-precision-") as folder:
        store, report = mine(mined, urls, Path(folder), rounds=rounds)
        with store:
            rows = audit(store, audited, default_lemmatizer())
    return rows, report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.mine_precision")
    parser.add_argument("--dataset", default="geoquery")
    parser.add_argument("--mine-split", default="train")
    parser.add_argument("--audit-split", default="test")
    parser.add_argument("--worst", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--rounds", type=int, default=0, help="mine N experiences at a time, as a stream does"
    )
    args = parser.parse_args(argv)
    rows, report = run(args.dataset, args.mine_split, args.audit_split, rounds=args.rounds)
    if args.json:
        figures = {
            "summary": summary(rows),
            "entries": [asdict(r) for r in rows],
            "report": report.to_dict(),
        }
        print(json.dumps(figures, indent=2, sort_keys=True, default=str))
        return 0
    how = f" in rounds of {args.rounds}" if args.rounds else ""
    _print(rows, report, args.worst, f"{args.dataset}: mined {args.mine_split}{how}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
