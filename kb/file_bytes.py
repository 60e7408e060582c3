"""The bytes of a file a user hands in (a document, a data dictionary), size-capped first."""

from __future__ import annotations

from pathlib import Path


def read_capped(path: Path, max_bytes: int, limit_name: str, error: type[Exception]) -> bytes:
    """The bytes of ``path``; ``error`` naming the file when it cannot be read or is over
    ``max_bytes`` (judged by its size, before reading: a 50 MB file costs nothing).
    ``limit_name`` says which limit ("document size limit")."""
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise error(f"{path}: {size:,} bytes is over the {limit_name} of {max_bytes:,}")
        return path.read_bytes()
    except OSError as exc:
        raise error(f"{path}: cannot read it: {exc.strerror or exc}") from None
