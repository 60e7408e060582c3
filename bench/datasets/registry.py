"""`load_dataset`: one entry point for known benchmark names and dataset paths.

Known names resolve under a data root: the ``data_root`` argument, else the environment variable
``ALMANAC_BENCH_DATA``, else ``../shared/data`` next to the repository. A path is loaded with the
loader its layout calls for (or the one named by ``layout``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.datasets.almanac_jsonl import load_almanac_jsonl
from bench.datasets.bird import load_bird
from bench.datasets.dataset import Dataset
from bench.datasets.kaggledbqa import load_kaggledbqa
from bench.datasets.spider import load_spider
from bench.datasets.text2sql import load_text2sql

logger = logging.getLogger(__name__)

DATA_ROOT_ENV = "ALMANAC_BENCH_DATA"
WORKPLACE_DATA_ROOT = Path("/work/shared/data")

LOADERS: dict[str, Callable[..., Dataset]] = {
    "spider": load_spider,
    "bird": load_bird,
    "kaggledbqa": load_kaggledbqa,
    "text2sql": load_text2sql,
    "almanac_jsonl": load_almanac_jsonl,
}

# name -> (layout, folder under the data root)
KNOWN_DATASETS: dict[str, tuple[str, str]] = {
    "spider_dev": ("spider", "spider_dev"),
    "geoquery": ("text2sql", "geoquery"),
}


def default_data_root() -> Path:
    """The benchmark data root.

    ``$ALMANAC_BENCH_DATA`` when set; else ``<repository>/../shared/data``, or, for a clone
    elsewhere (CI clones into a temporary folder), ``/work/shared/data`` when that exists.

    Returns:
        The folder (which may not exist).
    """
    configured = os.environ.get(DATA_ROOT_ENV)
    if configured:
        return Path(configured)
    beside_repo = Path(__file__).resolve().parents[2].parent / "shared" / "data"
    if not beside_repo.exists() and WORKPLACE_DATA_ROOT.exists():
        return WORKPLACE_DATA_ROOT
    return beside_repo


def load_dataset(
    name_or_path: str | Path,
    *,
    data_root: Path | str | None = None,
    layout: str | None = None,
    **options: Any,
) -> Dataset:
    """Loads a dataset by known name or by path.

    Args:
        name_or_path: A name in `KNOWN_DATASETS` (``spider_dev``, ``geoquery``) or a path to a
            dataset folder or file.
        data_root: Folder holding the known datasets; defaults to `default_data_root`.
        layout: Loader to use (a key of `LOADERS`); for a path, detected when omitted.
        **options: Passed to the loader, e.g. ``drop_failing_gold=True`` for text2sql data.

    Returns:
        The dataset.

    Raises:
        FileNotFoundError: If the name is not known and no such path exists.
        ValueError: If the layout is unknown or cannot be detected.
    """
    key = str(name_or_path)
    if key in KNOWN_DATASETS:
        known_layout, folder = KNOWN_DATASETS[key]
        root = Path(data_root) if data_root is not None else default_data_root()
        options.setdefault("name", key)
        return _loader(layout or known_layout)(root / folder, **options)
    path = Path(name_or_path)
    if not path.exists():
        known = ", ".join(sorted(KNOWN_DATASETS))
        raise FileNotFoundError(f"{key!r} is neither a known dataset ({known}) nor a path")
    return _loader(layout or detect_layout(path))(path, **options)


def detect_layout(path: Path) -> str:
    """Guesses the loader for a dataset path from its layout.

    Args:
        path: A dataset folder or file.

    Returns:
        A key of `LOADERS`.

    Raises:
        ValueError: If the layout is not recognised.
    """
    if path.is_file():
        if path.suffix == ".jsonl":
            return "almanac_jsonl"
        if path.suffix == ".json":
            return "text2sql"
    elif (path / "examples").is_dir() and (path / "databases").is_dir():
        return "kaggledbqa"
    elif (path / "dev.json").is_file() and (path / "dev_databases").is_dir():
        return "bird"
    elif (path / "dev.json").is_file() and (path / "database").is_dir():
        return "spider"
    elif len(list(path.glob("*.json"))) == 1:
        return "text2sql"
    raise ValueError(f"cannot tell the dataset layout of {path}; pass layout= ({sorted(LOADERS)})")


def _loader(name: str) -> Callable[..., Dataset]:
    if name not in LOADERS:
        raise ValueError(f"unknown dataset layout {name!r}; expected one of {sorted(LOADERS)}")
    return LOADERS[name]
