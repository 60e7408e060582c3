"""Index speed: string-index scaling, vector search and full retrieval.

    python -m bench.perf.indices [--sizes 10000,100000,1000000] [--entries 100000]

1. String index at each size: build time, resident-memory growth, and match p50/p99 per
   question (questions of ~12 words that mention a few known phrases), plus the ratio of the
   largest to the smallest size's p50 (matching must not slow down with more patterns).
2. Vector search p50 over ``--entries`` experiences. Entry vectors are random unit vectors
   seeded into the embedding cache (embedding 100k texts with MiniLM on 2 CPU cores would take
   minutes and does not change search cost); each query is embedded by the real MiniLM.
3. Full ``Retriever.retrieve`` p50/p99 over a store of ``--entries`` UKF (schema entries and
   experiences; vectors seeded as above), including embedding the question with MiniLM.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from bench.perf.store import generate, percentile, vocabulary
from indices.embeddings import MiniLMEmbedder
from indices.experience_index import ExperienceIndex
from indices.graph import GraphIndex
from indices.retriever import RetrievalOptions, Retriever
from indices.string import StringIndex
from indices.vector import VectorIndex
from kb.store import KnowledgeStore
from ukf import BaseUKF, ExperienceUKF, QueryContext


def rss_mib() -> float:
    with open("/proc/self/statm") as handle:
        pages = int(handle.read().split()[1])
    return pages * 4096 / 2**20


def phrases(count: int, rng: random.Random) -> list[str]:
    words = vocabulary(rng, size=20_000)
    made: set[str] = set()
    while len(made) < count:
        made.add(" ".join(rng.choices(words, k=rng.randint(1, 3))))
    return sorted(made)


def questions(pool: list[str], rng: random.Random, count: int = 300) -> list[str]:
    fillers = [
        "show",
        "me",
        "the",
        "total",
        "of",
        "for",
        "each",
        "by",
        "in",
        "last",
        "year",
        "please",
        "and",
        "with",
    ]
    out = []
    for _ in range(count):
        parts = rng.choices(fillers, k=8) + rng.sample(pool, 3)
        rng.shuffle(parts)
        out.append(" ".join(parts))
    return out


def time_calls(calls: list, repeat: int = 1) -> list[float]:
    samples = []
    for call in calls:
        start = time.perf_counter()
        for _ in range(repeat):
            call()
        samples.append((time.perf_counter() - start) / repeat)
    return samples


def bench_strings(sizes: list[int], seed: int) -> None:
    rng = random.Random(seed)
    all_phrases = phrases(max(sizes), rng)
    StringIndex().normalize("warm up the lemmatiser")  # spaCy tables load once, not measured
    print("string index   patterns    build s   +RSS MiB   match p50 ms   p99 ms")
    p50s = []
    for size in sizes:
        subset = all_phrases[:size]
        before = rss_mib()
        start = time.perf_counter()
        index = StringIndex()
        index.add(((f"id{i}", [p]) for i, p in enumerate(subset)), rebuild=False)
        index.rebuild()
        build = time.perf_counter() - start
        grown = rss_mib() - before
        asks = questions(subset, random.Random(seed + size))
        samples = time_calls([lambda q=q, ix=index: ix.search(q) for q in asks], repeat=5)
        p50s.append(percentile(samples, 0.5))
        print(
            f"               {size:>9,}  {build:8.1f}  {grown:9.0f}   {p50s[-1] * 1e3:11.3f}"
            f"   {percentile(samples, 0.99) * 1e3:6.3f}"
        )
    print(f"               p50 ratio {sizes[-1]:,}/{sizes[0]:,}: {p50s[-1] / p50s[0]:.2f}")


def seeded_vectors(index: VectorIndex, entries: list[BaseUKF], seed: int) -> None:
    """Random unit vectors for every serialized text, put in the embedding cache."""
    rng = np.random.default_rng(seed)
    texts = sorted({t for e in entries for s in index.serializers.values() if (t := s(e))})
    vectors = rng.standard_normal((len(texts), index.embedder.dimension)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index.seed_cache(texts, vectors)


def experiences(count: int, seed: int) -> list[BaseUKF]:
    rng = random.Random(seed)
    words = vocabulary(rng)
    return [
        ExperienceUKF.create(
            f"what is the {' '.join(rng.sample(words, 3))} of {i}",
            f"SELECT {i}",
            database=f"db{i % 20}",
        )
        for i in tqdm(range(count), desc="experiences", leave=False)
    ]


def bench_vectors_and_retrieval(entries: int, seed: int, embedder: MiniLMEmbedder) -> None:
    rng = random.Random(seed)
    asks = [f"what is the {w} revenue by region last year" for w in vocabulary(rng)[:200]]
    embedder.embed(["warm up"])
    exp = experiences(entries, seed)
    vectors = VectorIndex(embedder)
    seeded_vectors(vectors, exp, seed)
    vectors.add(exp)
    search = time_calls([lambda q=q: vectors.search(q, k=10) for q in asks])
    print(
        f"vector search  {entries:,} experiences: p50 {percentile(search, 0.5) * 1e3:.2f} ms"
        f"  p99 {percentile(search, 0.99) * 1e3:.2f} ms (query embedded by MiniLM)"
    )

    folder = Path(tempfile.mkdtemp(prefix="almanac-perf-indices-"))
    store = KnowledgeStore(f"sqlite:///{folder / 'k.db'}")
    schema = generate(entries - entries // 10, seed)
    store.upsert_many([*schema, *exp[: entries // 10]])
    vectors = VectorIndex(embedder)
    stored = list(store.iterate())
    seeded_vectors(vectors, stored, seed)
    vectors.add(stored)
    vectors.version = store.version
    # assembled by hand, not by IndexSet: the vectors above are seeded, not embedded (100k
    # MiniLM embeddings would take the benchmark's hour); the rest is as IndexSet builds it
    strings = StringIndex.from_store(store)
    retriever = Retriever(
        store,
        strings,
        GraphIndex.from_store(store),
        vectors,
        RetrievalOptions(),
        ExperienceIndex.from_store(store, embedder, strings),
    )
    contexts = [QueryContext(database=f"db{i % 20}") for i in range(len(asks))]
    full = time_calls(
        [lambda q=q, c=c: retriever.retrieve(q, c) for q, c in zip(asks, contexts, strict=True)]
    )
    print(
        f"retrieve       {store.count():,} UKF: p50 {percentile(full, 0.5) * 1e3:.1f} ms"
        f"  p99 {percentile(full, 0.99) * 1e3:.1f} ms (incl. embedding the question)"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    bench_strings([int(s) for s in args.sizes.split(",")], args.seed)
    bench_vectors_and_retrieval(args.entries, args.seed, MiniLMEmbedder())


if __name__ == "__main__":
    main()
