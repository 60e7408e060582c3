"""What a knowledge pack's query rewrites change in a recorded run, without a model: each
scored answer's SQL gets what the rules its question's context switches on carry, as the
chain adds it before it runs a query: the asker's own tables (:mod:`agents.sql.profile_tables`),
the period the question's time words settle on the calendar's period column
(:mod:`agents.sql.period_pin`) and the default filters (:mod:`agents.sql.default_filters`);
it is run again and scored
against the gold. A rewrite the query already holds, or one the run's chain already made,
changes nothing; so a run recorded before a rule gained its data shows what the data would
have won and lost. Prints the answers changed, won and lost, and EX before and
after, with each changed answer::

    python -m bench.autofin --out bench/out/autofin-data-s61    # the pack with the new filter
    python -m bench.replay_filters --dataset bench/out/autofin-data-s61/questions.jsonl \\
        --knowledge bench/out/autofin-data-s61/knowledge.jsonl \\
        --run bench/out/s60-autofin80-unseen-adaptive01
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from agents.rag.question_facts import pin_among
from agents.sql.default_filters import Filtered, filters_of, schema_columns
from agents.sql.profile_tables import own_tables_among
from agents.sql.rewrites import rule_rewrites
from bench.datasets.example import Example
from bench.datasets.registry import load_dataset
from bench.run import QuestionResult, best_gold, run_results
from kb.jsonl import read_jsonl
from kb.target.database import Database
from ukf import BaseUKF


@dataclass(frozen=True)
class Replayed:
    """One scored answer whose SQL the filters changed: right before and after."""

    id: str
    sql: str
    replayed_sql: str
    right_before: bool
    right_after: bool


@dataclass(frozen=True)
class ReplaySummary:
    answers: int
    right_before: int
    changed: list[Replayed]

    @property
    def right_after(self) -> int:
        return self.right_before + sum(r.right_after - r.right_before for r in self.changed)


def replay(rows: Iterable[QuestionResult], dataset: str, rules: list[BaseUKF]) -> ReplaySummary:
    """Replays the filters of ``rules`` on the scored answers ``rows`` of ``dataset``."""
    loaded = load_dataset(dataset)
    examples = {example.id: example for example in loaded.examples}
    databases: dict[str, Database] = {}
    columns: dict[str, dict[str, list[str]]] = {}  # each database's, read once
    answers = right = 0
    changed: list[Replayed] = []
    try:
        for row in tqdm(list(rows), desc="replay", unit="answer"):
            example, scores = examples.get(row.id), row.scores
            if example is None or scores is None or example.database not in loaded.databases:
                continue
            answers += 1
            before = scores.get("ex", 0.0) >= 1.0
            right += before
            sql = row.predicted_sql
            if not sql:
                continue
            if example.database not in databases:
                databases[example.database] = Database(loaded.databases[example.database])
                columns[example.database] = schema_columns(databases[example.database])
            database = databases[example.database]
            triggered = [r for r in rules if r.triggered(example.context)]
            filtered = _rewritten(sql, example, triggered, database, columns[example.database])
            if filtered is None:
                continue
            outcome = database.execute(filtered.sql)
            if not outcome.ok and outcome.error_kind == "sql":
                continue  # the chain runs the query as written when its rewrite fails
            golds = [(g, database.execute(g).rows) for g in example.gold_for(database.dialect)]
            replayed_rows = outcome.rows if outcome.ok else None
            after = best_gold(replayed_rows, golds, example.order_relevant)[1]["ex"] >= 1.0
            changed.append(Replayed(row.id, sql, filtered.sql, before, after))
    finally:
        for database in databases.values():
            database.close()
    return ReplaySummary(answers, right, changed)


def _rewritten(
    sql: str,
    example: Example,
    rules: list[BaseUKF],
    database: Database,
    columns: dict[str, list[str]],
) -> Filtered | None:
    """``sql`` as the chain would rewrite it for ``example`` (own tables, the period, then
    filters)."""
    question, context = example.question, example.context
    own = own_tables_among(rules, question, context.user_profile)
    pin = pin_among(rules, question, context)
    return rule_rewrites(sql, database, filters_of(rules), own, pin, lambda: columns)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.replay_filters", description=__doc__)
    parser.add_argument("--dataset", required=True, help="the runs' dataset (name or path)")
    parser.add_argument("--knowledge", type=Path, required=True, help="a knowledge pack (JSONL)")
    parser.add_argument("--run", type=Path, action="append", required=True,
                        help="a bench run folder (repeatable)")  # fmt: skip
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        rules = [e for e in read_jsonl(args.knowledge) if e.type == "rule"]
        rows = [result for run in args.run for result in run_results(run)]
        summary = replay(rows, args.dataset, rules)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for item in summary.changed:
        verdict = {(False, True): "won", (True, False): "lost"}.get(
            (item.right_before, item.right_after), "same"
        )
        print(f"{item.id} {verdict}: {item.replayed_sql}")
    n = max(summary.answers, 1)
    won = sum(r.right_after and not r.right_before for r in summary.changed)
    lost = sum(r.right_before and not r.right_after for r in summary.changed)
    print(f"answers: {summary.answers}  changed: {len(summary.changed)}  won: {won}  lost: {lost}")
    print(f"EX before: {summary.right_before / n:.3f}  after: {summary.right_after / n:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
