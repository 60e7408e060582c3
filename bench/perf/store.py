"""Knowledge-store throughput and latency.

    python -m bench.perf.store --n 100000 [--url URL] [--batch 1000] [--seed 7]

Generates ``n`` schema-like entries (columns and enum values over many tables, with tags and
synonyms), then prints: batched upsert throughput, ``get`` p50/p99, facet-filter p50 for a
``slot=value`` tag and for a synonym prefix (top 100 ids by priority), and the time to export
everything as JSONL and import it again. Without ``--url`` it uses a fresh SQLite file.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tqdm import tqdm

from kb.store import KnowledgeStore
from ukf import BaseUKF, ColumnUKF, EnumUKF, TableUKF

WORDS = (
    "revenue",
    "cost",
    "margin",
    "region",
    "model",
    "dealer",
    "budget",
    "forecast",
    "income",
    "ledger",
    "customer",
    "channel",
    "currency",
    "period",
    "caliber",
    "item",
)


def vocabulary(rng: random.Random, size: int = 3000) -> list[str]:
    """Pseudo-words (``"kavolu"``) standing in for a company's business vocabulary."""
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    return sorted({"".join(rng.choices(syllables, k=rng.randint(2, 4))) for _ in range(size)})


def generate(n: int, seed: int) -> list[BaseUKF]:
    """``n`` entries: per table one table entry, 10 columns, the rest enum values."""
    rng = random.Random(seed)
    words = vocabulary(rng)
    entries: list[BaseUKF] = []
    progress = tqdm(total=n, desc="generate", unit="entry", leave=False)
    table_no = 0
    while len(entries) < n:
        table = TableUKF.create(
            f"db{table_no % 20}",
            f"t{table_no}_{rng.choice(WORDS)}",
            synonyms=[f"{rng.choice(WORDS)} table {table_no}"],
        )
        table_no += 1
        batch: list[BaseUKF] = [table]
        columns = [
            ColumnUKF.create(
                table,
                f"c{i}_{rng.choice(WORDS)}",
                data_type="TEXT",
                synonyms=[f"{rng.choice(words)} {rng.choice(WORDS)} {i}"],
            )
            for i in range(10)
        ]
        batch += columns
        for value in range(40):
            column = rng.choice(columns)
            batch.append(
                EnumUKF.create(
                    column,
                    f"{rng.choice(WORDS)}-{value}",
                    count=value,
                    synonyms=[f"{rng.choice(words)} {value}"],
                )
            )
        batch = batch[: n - len(entries)]
        entries += batch
        progress.update(len(batch))
    progress.close()
    return entries


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def timed(calls: list[Callable[[], object]]) -> list[float]:
    samples = []
    for call in calls:
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return samples


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--url", help="store URL (default: a fresh SQLite file)")
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="almanac-perf-"))
    url = args.url or f"sqlite:///{workdir / 'knowledge.db'}"
    rng = random.Random(args.seed)

    entries = generate(args.n, args.seed)
    store = KnowledgeStore(url)
    start = time.perf_counter()
    for offset in tqdm(range(0, len(entries), args.batch), desc="upsert", unit="batch"):
        store.upsert_many(entries[offset : offset + args.batch])
    upsert_s = time.perf_counter() - start

    ids = [entry.id for entry in rng.sample(entries, min(args.queries, len(entries)))]
    get_samples = timed([lambda uid=uid: store.get(uid) for uid in ids])
    tables = [e for e in entries if e.type == "table"]
    picked = [rng.choice(tables).name for _ in range(args.queries // 4)]
    tag_samples = timed(
        [lambda t=t: store.search_ids(tags=[f"[TABLE:{t}]"], limit=100) for t in picked]
    )
    synonyms = [s for e in entries for s in e.synonyms]
    prefixes = [rng.choice(synonyms)[:5] for _ in range(args.queries // 4)]
    prefix_hits = [store.count(synonym_prefix=p) for p in prefixes[:50]]
    prefix_samples = timed(
        [lambda p=p: store.search_ids(synonym_prefix=p, limit=100) for p in prefixes]
    )

    export_path = workdir / "export.jsonl"
    start = time.perf_counter()
    exported = store.export_jsonl(export_path)
    export_s = time.perf_counter() - start
    target_url = f"sqlite:///{workdir / 'imported.db'}" if args.url is None else url
    target = KnowledgeStore(target_url)
    start = time.perf_counter()
    imported = target.import_jsonl(export_path)
    import_s = time.perf_counter() - start

    ms = 1000.0
    print(f"store: {store!r}   entries: {len(entries):,}   batch: {args.batch}")
    print(f"upsert           {len(entries) / upsert_s:10,.0f} entries/s  ({upsert_s:.1f} s)")
    print(
        f"get              p50 {percentile(get_samples, 0.5) * ms:7.2f} ms   "
        f"p99 {percentile(get_samples, 0.99) * ms:7.2f} ms   (n={len(get_samples)})"
    )
    print(
        f"facet slot=value p50 {percentile(tag_samples, 0.5) * ms:7.2f} ms   "
        f"p99 {percentile(tag_samples, 0.99) * ms:7.2f} ms"
    )
    print(
        f"synonym prefix   p50 {percentile(prefix_samples, 0.5) * ms:7.2f} ms   "
        f"p99 {percentile(prefix_samples, 0.99) * ms:7.2f} ms   "
        f"(5-char prefixes of stored synonyms, mean {statistics.mean(prefix_hits):,.0f} matches)"
    )
    print(f"export           {export_s:7.1f} s  ({exported:,} lines)")
    print(
        f"import           {import_s:7.1f} s  ({imported:,} entries"
        f"{', into a fresh SQLite store' if args.url is None else ', over the same store'})"
    )
    print(f"mean get {statistics.mean(get_samples) * ms:.2f} ms")
    store.close()
    target.close()


if __name__ == "__main__":
    main()
