"""MiniLM through ONNX Runtime: exported from the packaged model, the same vectors as torch."""

from __future__ import annotations

import json
import logging
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from indices.embedding_onnx import OnnxUnsupportedError, check_layout, onnx_model_file
from indices.embeddings import MiniLMEmbedder, _model_dir, shared_minilm

pytestmark = pytest.mark.slow  # exports and runs the real MiniLM, twice (~25 s on 2 cores)

TEXTS = [
    "",
    "Nova revenue last month?",
    "What are the names of the singers and number of concerts for each person?",
    "[TABLE] income_nova [COLUMN] ptd_amt_usd : Revenue, Cost",
    "Ünïcödé 数据 revenue!!",
    "long " * 400,  # past the 256-token limit: truncated like torch truncates
] + [f"value number {i}" for i in range(20)]  # more than a query batch: the bulk session


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx")


@pytest.fixture(scope="module")
def onnx_minilm(cache_dir: Path) -> MiniLMEmbedder:
    embedder = MiniLMEmbedder(cache_size=0, onnx_cache=cache_dir)
    assert embedder.runtime == "onnx"
    return embedder


def test_onnx_vectors_equal_torch_vectors(onnx_minilm: MiniLMEmbedder) -> None:
    torch_vectors = shared_minilm().embed(TEXTS)
    vectors = onnx_minilm.embed(TEXTS)
    assert vectors.shape == (len(TEXTS), 384) and vectors.dtype == np.float32
    assert np.abs(vectors - torch_vectors).max() < 1e-5
    one_by_one = np.stack([onnx_minilm.embed([t])[0] for t in TEXTS[:6]])
    assert np.abs(one_by_one - torch_vectors[:6]).max() < 1e-5  # padding changes nothing


def test_the_export_is_cached_and_reused(onnx_minilm: MiniLMEmbedder, cache_dir: Path) -> None:
    (exported,) = cache_dir.glob("minilm-*.onnx")
    stamp = exported.stat().st_mtime_ns
    again = MiniLMEmbedder(onnx_cache=cache_dir)
    assert again.runtime == "onnx" and exported.stat().st_mtime_ns == stamp
    assert not list(cache_dir.glob("*.part"))  # no half-written export left behind


def test_a_damaged_export_is_exported_again(cache_dir: Path, tmp_path: Path) -> None:
    model_dir = Path(_model_dir(None))
    damaged = onnx_model_file(model_dir, tmp_path)
    damaged.write_bytes(b"not an onnx graph")
    embedder = MiniLMEmbedder(onnx_cache=tmp_path)
    assert embedder.runtime == "onnx"
    assert damaged.stat().st_size > 1_000_000
    reference = shared_minilm().embed(["Nova revenue"])
    assert np.abs(embedder.embed(["Nova revenue"]) - reference).max() < 1e-5


def test_onnx_embedding_is_thread_safe(onnx_minilm: MiniLMEmbedder) -> None:
    texts = [f"question number {i}" for i in range(24)]
    reference = shared_minilm().embed(texts)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda t: onnx_minilm.embed([t, t + "?", "x"])[0], texts))
    assert np.abs(np.stack(results) - reference).max() < 1e-5


def test_other_poolings_stay_on_torch(
    tmp_path: Path, cache_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    source = Path(_model_dir(None))
    model_dir = tmp_path / "cls-model"
    model_dir.mkdir()
    for path in source.iterdir():
        (model_dir / path.name).symlink_to(path)
    (model_dir / "1_Pooling").unlink()
    (model_dir / "1_Pooling").mkdir()
    pooling = json.loads((source / "1_Pooling" / "config.json").read_text())
    pooling.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    (model_dir / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    with pytest.raises(OnnxUnsupportedError, match="pooling"):
        check_layout(model_dir)
    embedder = MiniLMEmbedder(model_path=str(model_dir), onnx_cache=tmp_path / "cache")
    with caplog.at_level(logging.WARNING, logger="indices.embeddings"):
        assert embedder.runtime == "torch"
    assert "embedding with PyTorch" in caplog.text
    assert embedder.embed(["cls pooled"]).shape == (1, 384)


def test_an_unwritable_cache_folder_falls_back_to_torch(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache folder should be")
    embedder = MiniLMEmbedder(onnx_cache=blocked / "models")
    assert embedder.runtime == "torch"
    assert embedder.embed(["Nova revenue"]).shape == (1, 384)
