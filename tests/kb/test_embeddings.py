"""Embeddings: the packaged MiniLM model (real, offline) and the hashing stand-in."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from indices.embeddings import Embedder, HashingEmbedder, MiniLMEmbedder, shared_minilm


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return shared_minilm()


def cosine(embedder: Embedder, a: str, b: str) -> float:
    va, vb = embedder.embed([a, b])
    return float(va @ vb)


def test_minilm_vectors_are_384_float32_unit_rows(minilm: MiniLMEmbedder) -> None:
    vectors = minilm.embed(["car", "automobile", "United States"])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert minilm.dimension == 384
    assert minilm.embed([]).shape == (0, 384)


def test_minilm_similarity_follows_meaning(minilm: MiniLMEmbedder) -> None:
    assert cosine(minilm, "car", "automobile") > cosine(minilm, "car", "banana")
    assert cosine(minilm, "revenue", "sales income") > cosine(minilm, "revenue", "birth date")


def test_minilm_cache_returns_the_same_vectors_without_recomputing(
    minilm: MiniLMEmbedder,
) -> None:
    first = minilm.embed(["cache me", "cache me too"])
    hits, misses = minilm.hits, minilm.misses
    again = minilm.embed(["cache me too", "cache me", "cache me"])
    assert minilm.hits == hits + 3 and minilm.misses == misses
    assert np.array_equal(again[0], first[1]) and np.array_equal(again[1], first[0])


def test_minilm_loads_lazily_and_evicts_least_recent() -> None:
    embedder = MiniLMEmbedder(cache_size=2)
    assert embedder._model is None  # nothing loaded at construction
    embedder._model = shared_minilm()._load()  # share the loaded weights to save time
    embedder.embed(["a", "b", "c"])
    assert list(embedder._cache) == ["b", "c"]
    with pytest.raises(ValueError):
        MiniLMEmbedder(batch_size=0)


def test_minilm_is_thread_safe(minilm: MiniLMEmbedder) -> None:
    texts = [f"value number {i}" for i in range(40)]
    expected = MiniLMEmbedder(cache_size=0)
    expected._model = minilm._load()
    reference = expected.embed(texts)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda t: minilm.embed([t])[0], texts))
    assert np.allclose(np.stack(results), reference, atol=1e-5)


def test_hashing_embedder_is_deterministic_and_normalised() -> None:
    embedder = HashingEmbedder(dimension=32)
    a = embedder.embed(["United States", "United States", ""])
    assert a.shape == (3, 32) and np.array_equal(a[0], a[1])
    assert np.isclose(np.linalg.norm(a[0]), 1.0) and not a[2].any()
    assert np.array_equal(HashingEmbedder(dimension=32).embed(["United States"])[0], a[0])
    assert cosine(embedder, "united states", "untied states") > cosine(embedder, "us", "zebra")
    assert isinstance(embedder, Embedder) and isinstance(shared_minilm(), Embedder)
