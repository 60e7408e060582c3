"""Stratified samples of a dataset: the same share of every difficulty, spread over databases."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from bench.datasets import Dataset
from bench.run import load_results


def stratified_sample(dataset: Dataset, size: int, *, seed: int = 0) -> Dataset:
    """``size`` examples with each difficulty in proportion (largest remainders), drawn
    round-robin over databases within a difficulty, in a seeded order; source order kept."""
    if size <= 0:
        raise ValueError(f"sample size must be positive, got {size}")
    if size >= len(dataset):
        return dataset
    rng = random.Random(seed)
    strata: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for example in dataset.examples:
        strata[example.difficulty or "unknown"][example.database].append(example)
    total = len(dataset)
    counts = {
        name: len([e for group in groups.values() for e in group])
        for name, groups in strata.items()
    }
    quota = {name: size * n // total for name, n in counts.items()}
    remainders = sorted(counts, key=lambda name: (-(size * counts[name] % total), name))
    for name in remainders[: size - sum(quota.values())]:
        quota[name] += 1
    chosen: set[str] = set()
    for name, groups in sorted(strata.items()):
        queues = {db: rng.sample(group, len(group)) for db, group in sorted(groups.items())}
        order = list(queues)
        rng.shuffle(order)
        taken = 0
        while taken < quota[name]:
            for db in order:
                if queues[db] and taken < quota[name]:
                    chosen.add(queues[db].pop().id)
                    taken += 1
    examples = [e for e in dataset.examples if e.id in chosen]
    return Dataset(f"{dataset.name}", examples, dict(dataset.databases))


def stratified_ids(dataset: Dataset, sizes: Iterable[int], *, seed: int = 0) -> set[str]:
    """The ids of every stratified sample of ``dataset`` of the given sizes (the questions
    ``--stratify N`` asks), e.g. to leave out of a later sample what a calibrator saw."""
    return {e.id for size in sizes for e in stratified_sample(dataset, size, seed=seed).examples}


def asked_ids(run_dir: Path) -> set[str]:
    """The ids of the questions a recorded ``bench run`` asked (its ``results.jsonl``), e.g.
    to leave out of a later sample what a calibrator fitted on that run saw."""
    results = run_dir / "results.jsonl"
    if not results.is_file():
        raise FileNotFoundError(f"--exclude-run {run_dir}: no results.jsonl there")
    return {result.id for result in load_results(results)}


def shuffled(dataset: Dataset, seed: int) -> Dataset:
    """``dataset``'s examples in a seeded random order: a stream that does not follow the
    file's grouping of question templates (GeoQuery lists its questions by template, the rare
    compound ones last, so the file's order makes the end of a stream harder than its start)."""
    examples = list(dataset.examples)
    random.Random(seed).shuffle(examples)
    return Dataset(dataset.name, examples, dict(dataset.databases))
