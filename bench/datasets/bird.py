"""Loader for the BIRD layout: ``dev.json`` + ``dev_databases/<db>/<db>.sqlite``.

Entries hold ``question_id``, ``db_id``, ``question``, ``evidence`` (external knowledge), ``SQL``
and ``difficulty`` (simple / moderate / challenging). Questions whose database file is missing are
skipped, with a warning giving the count.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from bench.datasets.dataset import Dataset
from bench.datasets.example import Example, make_tag
from bench.datasets.layout import entries_with_database, read_json_list, require_keys

logger = logging.getLogger(__name__)


def load_bird(
    root: Path | str,
    *,
    questions_file: str = "dev.json",
    database_dir: str | None = None,
    name: str | None = None,
    split: str | None = None,
) -> Dataset:
    """Loads a BIRD-layout dataset.

    Args:
        root: Folder holding the questions file and the database folder.
        questions_file: Questions file, relative to `root`.
        database_dir: Folder with ``<db>/<db>.sqlite``, relative to `root`; defaults to
            ``<split>_databases`` (``dev_databases`` for ``dev.json``).
        name: Dataset name; defaults to the folder name of `root`.
        split: Split label; defaults to the questions file's stem (``dev``).

    Returns:
        The dataset. Example ids are ``<name>-<question_id>`` (the position in the file when an
        entry has no ``question_id``).

    Raises:
        DatasetFormatError: If the questions file is malformed.
    """
    root = Path(root)
    path = root / questions_file
    name = name or root.resolve().name
    split = split or Path(questions_file).stem
    db_root = root / (database_dir or f"{split}_databases")
    entries = read_json_list(path)

    require_keys(path, entries, ("db_id", "question", "SQL"))
    kept, databases = entries_with_database(entries, db_root, name)
    examples = [_example(entry, index, name, split, url) for index, entry, url in kept]
    logger.info("%s: loaded %d examples on %d databases", name, len(examples), len(databases))
    return Dataset(name=name, examples=examples, databases=databases)


def _example(entry: dict[str, Any], index: int, name: str, split: str, url: str) -> Example:
    question_id = entry.get("question_id", index)
    evidence = (entry.get("evidence") or "").strip()
    return Example(
        id=f"{name}-{question_id}",
        question=entry["question"].strip(),
        database=entry["db_id"],
        database_url=url,
        gold_sql=[entry["SQL"].strip()],
        tags=[make_tag("DATASET", "bird")],
        difficulty=entry.get("difficulty"),
        split=split,
        evidence=evidence or None,
        metadata={"question_id": question_id},
    )
