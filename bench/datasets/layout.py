"""Small file-layout helpers shared by the loaders."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.datasets.dataset import DatasetFormatError

SQLITE_SUFFIXES = (".sqlite", ".db", ".sqlite3")


def read_json_list(path: Path) -> list[dict[str, Any]]:
    """Reads a JSON file holding a list of objects.

    Args:
        path: The JSON file.

    Returns:
        The objects.

    Raises:
        DatasetFormatError: If the file is not JSON or not a list of objects.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise DatasetFormatError(path, f"invalid JSON: {err}", line=err.lineno) from err
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise DatasetFormatError(path, "expected a JSON list of objects")
    return data


def require_keys(path: Path, index: int, entry: dict[str, Any], keys: tuple[str, ...]) -> None:
    """Checks that a JSON entry has the given keys.

    Args:
        path: File the entry comes from (for the error message).
        index: Position of the entry in the file.
        entry: The entry.
        keys: Keys it must have.

    Raises:
        DatasetFormatError: Naming the first missing key.
    """
    for key in keys:
        if key not in entry:
            raise DatasetFormatError(path, f"entry {index} lacks this field", field=key)


def sqlite_file(database_dir: Path, db_id: str) -> Path | None:
    """Finds ``<database_dir>/<db_id>/<db_id>.sqlite`` (or ``.db``, ``.sqlite3``).

    Args:
        database_dir: Folder with one sub-folder per database.
        db_id: Database id.

    Returns:
        The file, or None when it does not exist.
    """
    for suffix in SQLITE_SUFFIXES:
        candidate = database_dir / db_id / f"{db_id}{suffix}"
        if candidate.is_file():
            return candidate
    return None
