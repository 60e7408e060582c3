"""Loader for the Spider layout: ``<split>.json`` + ``database/<db>/<db>.sqlite``.

Each entry holds ``db_id``, ``question`` and ``query`` (gold SQL), and in the official files also
``sql``, Spider's own parse of the query, from which the hardness level is computed exactly;
entries without it get the sqlglot approximation (`bench.datasets.hardness`). Questions whose
database file is missing are skipped, with a warning giving the count.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from bench.datasets.dataset import Dataset
from bench.datasets.example import Example, make_tag
from bench.datasets.hardness import approximate_hardness, official_hardness
from bench.datasets.layout import entries_with_database, read_json_list, require_keys

logger = logging.getLogger(__name__)

_SPLIT_BY_FILE = {"dev": "dev", "train_spider": "train", "train_others": "train", "test": "test"}


def load_spider(
    root: Path | str,
    *,
    questions_file: str = "dev.json",
    database_dir: str = "database",
    name: str | None = None,
    split: str | None = None,
) -> Dataset:
    """Loads a Spider-layout dataset.

    Args:
        root: Folder holding the questions file and the database folder.
        questions_file: Questions file, relative to `root`.
        database_dir: Folder with ``<db>/<db>.sqlite``, relative to `root`.
        name: Dataset name; defaults to the folder name of `root`.
        split: Split label for every example; defaults to one derived from the file name
            (``dev.json`` -> ``dev``, ``train_spider.json`` -> ``train``).

    Returns:
        The dataset. Example ids are ``<name>-<index in file>`` (zero-padded to 4 digits), so they
        stay stable when questions are skipped.

    Raises:
        DatasetFormatError: If the questions file is malformed.
    """
    root = Path(root)
    path = root / questions_file
    name = name or root.resolve().name
    stem = Path(questions_file).stem
    split = split or _SPLIT_BY_FILE.get(stem, stem)
    entries = read_json_list(path)

    require_keys(path, entries, ("db_id", "question", "query"))
    kept, databases = entries_with_database(entries, root / database_dir, name)
    examples = [_example(entry, index, name, split, url) for index, entry, url in kept]
    logger.info("%s: loaded %d examples on %d databases", name, len(examples), len(databases))
    return Dataset(name=name, examples=examples, databases=databases)


def spider_difficulty(entry: dict[str, Any]) -> str | None:
    """Hardness of a Spider entry: official when it carries Spider's parse, else approximated.

    Args:
        entry: A Spider JSON entry (``query`` and optionally ``sql``).

    Returns:
        ``easy``, ``medium``, ``hard`` or ``extra``; None when the SQL cannot be parsed.
    """
    parsed = entry.get("sql")
    if isinstance(parsed, dict):
        try:
            return official_hardness(parsed)
        except (KeyError, IndexError, TypeError):
            logger.debug("unexpected Spider parse for %r; approximating", entry["query"])
    return approximate_hardness(entry["query"])


def _example(entry: dict[str, Any], index: int, name: str, split: str, url: str) -> Example:
    return Example(
        id=f"{name}-{index:04d}",
        question=entry["question"].strip(),
        database=entry["db_id"],
        database_url=url,
        gold_sql=[entry["query"].strip()],
        tags=[make_tag("DATASET", "spider")],
        difficulty=spider_difficulty(entry),
        split=split,
        metadata={"index": index},
    )
