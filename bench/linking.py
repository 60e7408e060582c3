"""Schema-linking quality of the retriever.

    python -m bench.linking --dataset spider_dev|geoquery|PATH [--limit N] [--budget 1500]
                            [--experiences]

Profiles every database of the dataset into a fresh knowledge store (profiling alone: no
descriptions, documents or experiences), builds the fused retriever over it and retrieves
Evidence for every question. Each gold SQL is parsed (:mod:`bench.sql_elements`) and the
printout gives, averaged over questions:

- recall of gold tables (table entries in the Evidence),
- recall of gold columns (column entries, plus the key columns of the join paths shown),
- recall of question literals (string literals of the gold SQL found as enum values),
- the mean Evidence size in items and estimated tokens (and its 95th percentile).

``--experiences`` (datasets with train and test splits, e.g. GeoQuery) also stores the train
questions as labeled experiences and reports how often the retriever's top experience for a
test question shares the SQL skeleton of its gold query (:func:`experience_skeleton_match`).
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from tqdm import tqdm

from bench.datasets import Dataset, Example, MissingDatabaseError, load_dataset, require_databases
from bench.skeleton import sql_skeleton
from bench.sql_elements import Schema, sql_elements
from indices.embeddings import Embedder, MiniLMEmbedder
from indices.evidence import Evidence
from indices.index_set import IndexSet
from indices.retriever import RetrievalOptions, Retriever
from kb.profile.profiler import profile_database
from kb.store import KnowledgeStore
from kb.target.database import Database
from ukf import BaseUKF, ExperienceUKF, QueryContext

log = logging.getLogger(__name__)


@dataclass
class LinkingScores:
    table_recall: list[float] = field(default_factory=list)
    column_recall: list[float] = field(default_factory=list)
    literal_recall: list[float] = field(default_factory=list)
    items: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


def retrieved_elements(evidence: Evidence, retriever: Retriever) -> tuple[set, set, set]:
    """Tables, ``(table, column)`` pairs and enum values the Evidence shows (lower-case)."""
    tables, columns, values = set(), set(), set()
    for item in evidence.items:
        res = item.entry.content_resources
        if item.entry.type == "table":
            tables.add(item.entry.name.lower())
        elif item.entry.type == "column":
            columns.add((res["table"].lower(), res["column"].lower()))
        elif item.entry.type == "enum":
            values.add(str(res.get("value")).lower())
            values.update(s.lower() for s in item.entry.synonyms)
    for path in evidence.join_paths:
        for step in path:
            source = retriever.graph.node(step["from"])["name"].lower()
            target = retriever.graph.node(step["to"])["name"].lower()
            columns.update((source, c.lower()) for c in step.get("columns", []))
            columns.update((target, c.lower()) for c in step.get("ref_columns", []))
    return tables, columns, values


def _recall(gold: set, found: set) -> float | None:
    return len(gold & found) / len(gold) if gold else None


def score_example(
    example: Example, schema: Schema, retriever: Retriever, scores: LinkingScores
) -> None:
    start = time.perf_counter()
    evidence = retriever.retrieve(example.question, example.context.on(example.database))
    scores.seconds.append(time.perf_counter() - start)
    gold = sql_elements(example.gold_sql[0], schema)
    tables, columns, values = retrieved_elements(evidence, retriever)
    for bucket, value in (
        (scores.table_recall, _recall(gold.tables, tables)),
        (scores.column_recall, _recall(gold.columns, columns)),
        (scores.literal_recall, _recall(gold.literals, values)),
    ):
        if value is not None:
            bucket.append(value)
    scores.items.append(len(evidence.items))
    scores.tokens.append(evidence.tokens)


def run_linking(dataset: Dataset, store_url: str, options: RetrievalOptions) -> LinkingScores:
    store = KnowledgeStore(store_url)
    schemas: dict[str, Schema] = {}
    started = time.perf_counter()
    for name, url in tqdm(sorted(dataset.databases.items()), desc="profile", unit="db"):
        with Database(url) as database:
            profile_database(database, store, database_name=name)
            schemas[name] = {
                t: {c.name: c.type for c in info.columns} for t, info in database.reflect().items()
            }
    log.info("profiled %d databases in %.1f s", len(schemas), time.perf_counter() - started)
    retriever = IndexSet.build(store).retriever(options)  # no embedder: profiling alone
    scores = LinkingScores()
    for example in tqdm(dataset.examples, desc="retrieve", unit="q"):
        score_example(example, schemas[example.database], retriever, scores)
    store.close()
    return scores


def experience_skeleton_match(
    dataset: Dataset,
    store_url: str,
    embedder: Embedder,
    *,
    train: str = "train",
    test: str = "test",
    options: RetrievalOptions | None = None,
) -> ExperienceMatch:
    """How often a ``test`` question's top ``train`` experience has its SQL skeleton.

    The databases are profiled first (so values can be recognised in questions), the ``train``
    questions stored as labeled experiences, and the retriever built by
    :class:`~indices.index_set.IndexSet` as the server builds it, less the vector index
    (:class:`~indices.experience_index.ExperienceIndex` as its experience tier). The top
    experience is the best-scored one in the Evidence of the test question, whether or not
    the token budget kept it; ``shown`` counts those the budget kept.
    """
    store = KnowledgeStore(store_url)
    for name, url in dataset.databases.items():
        with Database(url) as database:
            profile_database(database, store, database_name=name)
    known = dataset.filter(split=train).examples
    store.upsert_many(
        ExperienceUKF.create(
            ex.question,
            ex.gold_sql[0],
            database=ex.database,
            labeled=True,
            content_resources={"example": ex.id},
        )
        for ex in known
    )
    indices = IndexSet.build(store, embedder, vectors=False)
    retriever = indices.retriever(options)
    skeletons = {ex.id: sql_skeleton(ex.gold_sql[0]) for ex in known}
    asked = dataset.filter(split=test).examples
    same = shown = 0
    for example in tqdm(asked, desc="top experience", unit="q"):
        evidence = retriever.retrieve(example.question, QueryContext(database=example.database))
        top = top_experience(evidence)
        if top is not None:
            nearest = top.content_resources["example"]
            same += skeletons[nearest] == sql_skeleton(example.gold_sql[0])
            shown += top.id in evidence.ids("experience")
    indices.stop()
    store.close()
    return ExperienceMatch(same / max(1, len(asked)), len(asked), len(known), shown)


class ExperienceMatch(NamedTuple):
    share: float  # of test questions whose top experience has their gold SQL skeleton
    asked: int  # test questions
    known: int  # train experiences
    shown: int  # test questions whose top experience the token budget kept


def top_experience(evidence: Evidence) -> BaseUKF | None:
    """The Evidence's best-scored experience (shown or dropped for the budget)."""
    found = [i for i in (*evidence.items, *evidence.dropped) if i.entry.type == "experience"]
    return min(found, key=lambda i: (-i.score, i.entry.id)).entry if found else None


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="schema-linking recall of the retriever")
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--limit", type=int)
    parser.add_argument("--budget", type=int, default=1500, help="Evidence token budget")
    parser.add_argument("--store", help="knowledge store URL (default: a fresh SQLite file)")
    parser.add_argument(
        "--experiences",
        action="store_true",
        help="also load the train split as experiences and report how often a "
        "test question's nearest experience shares its SQL skeleton",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    dataset = load_dataset(args.dataset)
    if args.limit:
        dataset = dataset.filter(limit=args.limit)
    try:
        require_databases(dataset, source=Path(args.dataset))
    except MissingDatabaseError as exc:
        parser.error(str(exc))
    url = args.store or f"sqlite:///{Path(tempfile.mkdtemp(prefix='almanac-linking-')) / 'k.db'}"
    scores = run_linking(dataset, url, RetrievalOptions(budget_tokens=args.budget))
    tokens = sorted(scores.tokens)
    print(f"dataset {dataset.name}: {len(dataset)} questions, budget {args.budget} tokens")
    print(f"table recall     {_mean(scores.table_recall):.4f}  (n={len(scores.table_recall)})")
    print(f"column recall    {_mean(scores.column_recall):.4f}  (n={len(scores.column_recall)})")
    print(f"literal recall   {_mean(scores.literal_recall):.4f}  (n={len(scores.literal_recall)})")
    print(
        f"evidence         {_mean(scores.items):.1f} items, {_mean(scores.tokens):.0f} tokens "
        f"mean, {tokens[int(0.95 * (len(tokens) - 1))] if tokens else 0} tokens p95"
    )
    print(f"retrieve         {_mean(scores.seconds) * 1000:.1f} ms mean per question")
    if args.experiences:
        folder = Path(tempfile.mkdtemp(prefix="almanac-experiences-"))
        match = experience_skeleton_match(
            load_dataset(args.dataset),
            f"sqlite:///{folder / 'k.db'}",
            MiniLMEmbedder(),
            options=RetrievalOptions(budget_tokens=args.budget),
        )
        print(
            f"nearest experience shares the gold SQL skeleton: {match.share:.4f} "
            f"({match.asked} test questions, {match.known} train experiences; MiniLM, "
            f"skeleton-whitened views); shown within the budget for {match.shown}"
        )


if __name__ == "__main__":
    main()
