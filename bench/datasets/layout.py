"""Small file-layout helpers shared by the loaders."""

from __future__ import annotations

import json
import logging
from collections import Counter
from pathlib import Path
from typing import Any

from bench.datasets.dataset import DatasetFormatError, sqlite_url

logger = logging.getLogger(__name__)

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


def require_keys(path: Path, entries: list[dict[str, Any]], keys: tuple[str, ...]) -> None:
    """Checks that every JSON entry has the given keys.

    Args:
        path: File the entries come from (for the error message).
        entries: The entries.
        keys: Keys each must have.

    Raises:
        DatasetFormatError: Naming the first entry and key missing.
    """
    for index, entry in enumerate(entries):
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


def entries_with_database(
    entries: list[dict[str, Any]], database_dir: Path, dataset_name: str
) -> tuple[list[tuple[int, dict[str, Any], str]], dict[str, str]]:
    """Pairs entries with the URL of their ``db_id``'s SQLite file, skipping missing databases.

    Logs a warning with the number of skipped entries per missing database.

    Args:
        entries: JSON entries, each with a ``db_id``.
        database_dir: Folder with ``<db>/<db>.sqlite``.
        dataset_name: Dataset name, for the log message.

    Returns:
        ``(position, entry, url)`` for every kept entry, and the database id -> URL mapping.
    """
    databases: dict[str, str] = {}
    missing: Counter[str] = Counter()
    kept: list[tuple[int, dict[str, Any], str]] = []
    for index, entry in enumerate(entries):
        db_id = entry["db_id"]
        if db_id not in databases and db_id not in missing:
            db_file = sqlite_file(database_dir, db_id)
            if db_file is not None:
                databases[db_id] = sqlite_url(db_file)
        if db_id in databases:
            kept.append((index, entry, databases[db_id]))
        else:
            missing[db_id] += 1
    if missing:
        logger.warning(
            "%s: skipped %d of %d questions whose database file is missing: %s",
            dataset_name,
            sum(missing.values()),
            len(entries),
            ", ".join(f"{db} ({n})" for db, n in sorted(missing.items())),
        )
    return kept, databases
