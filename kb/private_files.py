"""Files only the server's own user may read: folders 0700, files 0600.

The knowledge store holds API key hashes, the audit log and the knowledge itself; the
embedding and LLM caches hold the texts they were computed from. Each is created here
before SQLite opens it (SQLite gives its ``-wal`` and ``-shm`` files the mode of the
database file), so the process umask does not decide who can read them. Files and folders
that exist already keep their mode: tightening them is the operator's decision.
"""

from __future__ import annotations

import os
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """``path`` as a folder; created 0700 (with its missing parents) when it is not there."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    for folder in reversed(missing):
        folder.mkdir(mode=DIR_MODE, exist_ok=True)
    return path


def private_file(path: Path) -> Path:
    """``path`` as a file; created empty, 0600, in a 0700 folder when it is not there."""
    private_dir(path.parent)
    if not path.exists():
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE))
    return path
