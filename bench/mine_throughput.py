"""Throughput of labeled mining (the deterministic part: no LLM pairer).

    python -m bench.mine_throughput [--dataset geoquery] [--split train] [--repeat 3]
                                    [--no-target] [--json]

Profiles the dataset's databases into a fresh knowledge store, turns the questions of
``--split`` into labeled experiences (question + gold SQL) and mines them with
:func:`agents.learn.mine.mine_labeled`, ``--repeat`` times, each into a fresh copy of the
profiled store (the first run pays the lemmatiser's warm-up; the best run is reported). The
string index is built once, outside the timing, as a server already holds it. Values not
profiled as enums are checked read-only on the target database unless ``--no-target``.

Prints experiences per second (mining with merge, and extraction alone), how many entries of
each kind were mined, dropped (by reason) and merged, and the skipped experiences.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from agents.learn.mine import mine_labeled
from bench.datasets import load_dataset
from bench.datasets.example import Example
from indices.normalize import default_lemmatizer
from indices.string import StringIndex
from kb.profile.profiler import ProfileOptions, profile_database
from kb.store import KnowledgeStore
from kb.target.database import Database
from ukf import ExperienceUKF


def experiences_of(examples: list[Example]) -> list[ExperienceUKF]:
    return [
        ExperienceUKF.create(
            e.question,
            e.gold_sql[0],
            database=e.database,
            dialect="sqlite",
            labeled=True,
            source="user",
        )
        for e in examples
    ]


def measure(dataset: str, split: str, repeat: int, *, check_target: bool) -> dict[str, Any]:
    examples = [e for e in load_dataset(dataset).examples if e.split == split]
    if not examples:
        raise ValueError(f"no {split!r} questions in {dataset}")
    urls = {e.database: e.database_url for e in examples if e.database_url}
    experiences = experiences_of(examples)
    lemmatizer = default_lemmatizer()
    with tempfile.TemporaryDirectory(prefix="mine-bench-") as folder:
        profiled = Path(folder) / "profiled.db"
        with KnowledgeStore(f"sqlite:///{profiled}") as store:
            for name, url in urls.items():
                with Database(url) as database:
                    profile_database(
                        database, store, database_name=name, options=ProfileOptions(progress=False)
                    )
            strings = StringIndex.from_store(store, lemmatizer)
        runs = []
        for attempt in range(repeat):
            copy = Path(folder) / f"run{attempt}.db"
            shutil.copyfile(profiled, copy)
            targets = {n: Database(u) for n, u in urls.items()} if check_target else {}
            with KnowledgeStore(f"sqlite:///{copy}") as store:
                dry = mine_labeled(
                    store,
                    experiences,
                    strings=strings,
                    lemmatizer=lemmatizer,
                    targets=targets,
                    apply=False,
                )
                report = mine_labeled(
                    store, experiences, strings=strings, lemmatizer=lemmatizer, targets=targets
                )
                runs.append((dry.seconds, report.seconds, report))
            for database in targets.values():
                database.close()
    extract_s = min(run[0] for run in runs)
    total_s = min(run[1] for run in runs)
    report = runs[-1][2]
    return {
        "dataset": dataset,
        "split": split,
        "experiences": report.experiences,
        "mined_experiences": report.mined_experiences,
        "extract_per_s": round(len(experiences) / extract_s, 1),
        "mine_and_merge_per_s": round(len(experiences) / total_s, 1),
        "best_of": repeat,
        "mined": dict(report.mined),
        "dropped": dict(report.dropped),
        "merge": report.merge,
        "known": report.known,
        "unpaired": report.unpaired,
        "unchecked_values": report.unchecked_values,
        "skipped": [s["reason"] for s in report.skipped],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.mine_throughput")
    parser.add_argument("--dataset", default="geoquery")
    parser.add_argument("--split", default="train")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-target", action="store_true", help="do not query the database")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    figures = measure(args.dataset, args.split, args.repeat, check_target=not args.no_target)
    if args.json:
        print(json.dumps(figures, indent=2, sort_keys=True))
        return 0
    print(
        f"{figures['dataset']} {figures['split']}: {figures['experiences']} labeled experiences, "
        f"{figures['extract_per_s']} /s extraction (dry run), "
        f"{figures['mine_and_merge_per_s']} /s with the merge (best of {figures['best_of']})"
    )
    for key in ("mined", "dropped", "merge"):
        print(f"{key}: {figures[key]}")
    print(
        f"known: {figures['known']}, unpaired (left for the LLM pairer): {figures['unpaired']}, "
        f"values unchecked: {figures['unchecked_values']}, skipped: {len(figures['skipped'])}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
