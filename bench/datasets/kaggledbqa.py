"""Loader for the KaggleDBQA layout.

``examples/<db>_test.json`` and ``examples/<db>_fewshot.json`` hold Spider-style entries
(``db_id``, ``question``, ``query``, maybe ``question_toks``); databases live under
``databases/<db>/<db>.sqlite``. The split of an example is the file's suffix (``test`` or
``fewshot``). Other files under ``examples/`` (such as the combined ``<db>.json``) are ignored.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench.datasets.dataset import Dataset
from bench.datasets.example import Example, make_tag
from bench.datasets.layout import entries_with_database, read_json_list, require_keys

logger = logging.getLogger(__name__)

SPLITS = ("test", "fewshot")


def load_kaggledbqa(
    root: Path | str,
    *,
    splits: Iterable[str] = SPLITS,
    examples_dir: str = "examples",
    database_dir: str = "databases",
    name: str | None = None,
) -> Dataset:
    """Loads a KaggleDBQA-layout dataset.

    Args:
        root: Folder holding the examples and databases folders.
        splits: Which splits to load, among ``test`` and ``fewshot``.
        examples_dir: Folder with ``<db>_<split>.json``, relative to `root`.
        database_dir: Folder with ``<db>/<db>.sqlite``, relative to `root`.
        name: Dataset name; defaults to the folder name of `root`.

    Returns:
        The dataset. Example ids are ``<name>-<db>-<split>-<position in file>``.

    Raises:
        DatasetFormatError: If an examples file is malformed.
        ValueError: If `splits` names an unknown split.
    """
    root = Path(root)
    name = name or root.resolve().name
    splits = tuple(splits)
    unknown = set(splits) - set(SPLITS)
    if unknown:
        raise ValueError(f"unknown KaggleDBQA splits {sorted(unknown)}; expected {SPLITS}")

    examples: list[Example] = []
    databases: dict[str, str] = {}
    for split in splits:
        for path in sorted((root / examples_dir).glob(f"*_{split}.json")):
            file_db = path.name[: -len(f"_{split}.json")]
            entries = read_json_list(path)
            entries = [{"db_id": file_db, **entry} for entry in entries]
            require_keys(path, entries, ("question", "query"))
            kept, dbs = entries_with_database(entries, root / database_dir, name)
            databases.update(dbs)
            examples.extend(
                _example(entry, f"{name}-{file_db}-{split}-{index:03d}", split, url)
                for index, entry, url in kept
            )
    logger.info("%s: loaded %d examples on %d databases", name, len(examples), len(databases))
    return Dataset(name=name, examples=examples, databases=databases)


def _example(entry: dict[str, Any], example_id: str, split: str, url: str) -> Example:
    return Example(
        id=example_id,
        question=entry["question"].strip(),
        database=entry["db_id"],
        database_url=url,
        gold_sql=[entry["query"].strip()],
        tags=[make_tag("DATASET", "kaggledbqa")],
        split=split,
    )
