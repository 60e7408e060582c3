"""Vectors kept on disk: a new process (a new embedder) reads them instead of embedding."""

from __future__ import annotations

import numpy as np

from indices.embedding_store import EmbeddingStore
from indices.embeddings import MiniLMEmbedder, shared_minilm

TEXTS = ["Nova revenue", "income statement", "Nova revenue", "report item"]


def loaded(tmp_path) -> MiniLMEmbedder:
    embedder = MiniLMEmbedder(store=tmp_path / "embeddings.sqlite")
    embedder._model = shared_minilm()._load()  # share the loaded weights to save time
    return embedder


def test_a_new_embedder_reads_the_vectors_another_one_stored(tmp_path):
    first = loaded(tmp_path)
    expected = first.embed(TEXTS)
    later = MiniLMEmbedder(store=tmp_path / "embeddings.sqlite")  # no model loaded
    again = later.embed(TEXTS)
    assert later._model is None  # every text came from the file
    assert np.array_equal(again, expected)
    mixed = later.embed(["report item", "a text nobody embedded"])
    assert later._model is not None and np.array_equal(mixed[0], expected[3])


def test_other_models_and_other_lengths_are_not_mixed_up(tmp_path):
    path = tmp_path / "vectors.sqlite"
    EmbeddingStore(path, "model-a", 3).put_many(["x"], np.array([[1.0, 0.0, 0.0]]))
    assert EmbeddingStore(path, "model-b", 3).get_many(["x"]) == {}
    assert EmbeddingStore(path, "model-a", 4).get_many(["x"]) == {}
    (vector,) = EmbeddingStore(path, "model-a", 3).get_many(["x"]).values()
    assert vector.tolist() == [1.0, 0.0, 0.0]


def test_an_unusable_file_costs_speed_not_the_vectors(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the store's folder should be")
    embedder = MiniLMEmbedder(store=blocker / "embeddings.sqlite")
    embedder._model = shared_minilm()._load()
    vectors = embedder.embed(TEXTS)
    assert vectors.shape == (4, 384) and np.array_equal(vectors[0], vectors[2])
