"""Embedded texts kept on disk, so a new process does not embed the knowledge base again.

Building the vector indices embeds every entry's texts: ~6,000 AutoFin texts take ~5 s of
MiniLM on 2 cores, paid again by every ``almanac ask`` process and every server start.
:class:`EmbeddingStore` keeps each vector in a SQLite file keyed by a hash of the model's name
and the text; the embedder reads what it finds there before it runs the model. Several
processes may share the file (SQLite's WAL); a file that cannot be opened or written costs
speed and a warning, never an embedding.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from kb.private_files import private_file

log = logging.getLogger(__name__)
_CHUNK = 500  # keys per SELECT (below SQLite's bound-parameter limit)


class EmbeddingStore:
    """Vectors of one model in ``path`` (created on first use).

    Args:
        path: The SQLite file.
        model: The model's name; vectors of another model in the same file are not mixed up.
        dimension: Length of the vectors; rows of another length are ignored.
    """

    def __init__(self, path: Path, model: str, dimension: int) -> None:
        self.path, self.model, self.dimension = Path(path), model, dimension
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._broken = False

    def get_many(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of ``texts`` (missing ones are left out)."""
        keys = {self._key(text): text for text in texts}
        found: dict[str, np.ndarray] = {}
        with self._lock:
            connection = self._connect()
            if connection is None:
                return found
            listed = list(keys)
            try:
                for start in range(0, len(listed), _CHUNK):
                    chunk = listed[start : start + _CHUNK]
                    marks = ",".join("?" * len(chunk))
                    rows = connection.execute(
                        f"SELECT key, vector FROM vectors WHERE key IN ({marks})", chunk
                    )
                    for key, blob in rows:
                        vector = np.frombuffer(blob, dtype=np.float32)
                        if len(vector) == self.dimension:
                            found[keys[key]] = vector
            except sqlite3.Error as exc:
                self._give_up(exc)
        return found

    def put_many(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Store ``vectors`` (one row per text)."""
        rows = [
            (self._key(text), np.asarray(vector, dtype=np.float32).tobytes())
            for text, vector in zip(texts, vectors, strict=True)
        ]
        with self._lock:
            connection = self._connect()
            if connection is None:
                return
            try:
                with connection:
                    connection.executemany(
                        "INSERT OR REPLACE INTO vectors (key, vector) VALUES (?, ?)", rows
                    )
            except sqlite3.Error as exc:
                self._give_up(exc)

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    def _key(self, text: str) -> str:
        return hashlib.sha1(f"{self.model}\x00{text}".encode()).hexdigest()

    def _connect(self) -> sqlite3.Connection | None:
        if self._connection is not None or self._broken:
            return self._connection
        try:
            private_file(self.path)  # 0600: the vectors' texts are knowledge
            connection = sqlite3.connect(self.path, timeout=10.0, check_same_thread=False)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute(
                "CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)"
            )
        except (OSError, sqlite3.Error) as exc:
            self._give_up(exc)
            return None
        self._connection = connection
        return connection

    def _give_up(self, exc: Exception) -> None:
        log.warning("embedding store %s not used: %s", self.path, exc)
        self._broken = True
        if self._connection is not None:
            self._connection.close()
            self._connection = None
