"""Loader for InsightBench (ServiceNow, MIT licence): 60 analysis tasks with ground-truth insights.

``<root>/flag-N.json`` holds one task: ``metadata`` (goal, role, category,
``dataset_description``, ...), ``insight_list`` (one dict per insight: ``data_type`` such as
descriptive / diagnostic / predictive / prescriptive, ``insight``, maybe ``question``,
``insight_value``, ``plot``, ``code``), ``insights`` (the insight texts alone), ``summary``,
and ``dataset_csv_path`` / ``user_dataset_csv_path`` naming its tables as
``data/notebooks/csvs/flag-N.csv``, found here as ``<root>/csvs/flag-N.csv``. ``metadata`` and
``insight_list`` may also be Python-literal strings (as some releases write them), and so may
an insight's fields (flag-34 writes ``"'diagnostic'"``); those are read with
:func:`ast.literal_eval`, never evaluated. Insights with empty text are left out (flag-34 has
one; flag-36 has only empty ones, so only its summary can be scored).

Each task's tables go into one SQLite file per task in a cache folder (a table per CSV, named
by its sanitised stem; column types inferred by pandas; dates stay the CSV's ISO text). A file
already there and newer than its CSVs is reused.
"""

from __future__ import annotations

import ast
import json
import logging
import re
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.datasets.dataset import DatasetFormatError
from bench.datasets.registry import default_data_root

logger = logging.getLogger(__name__)

CSV_KEYS = ("dataset_csv_path", "user_dataset_csv_path")
REQUIRED = ("metadata", "insight_list", "summary", "dataset_csv_path")


@dataclass(frozen=True)
class Insight:
    """One ground-truth insight: its text, its analysis type (lower case; "" when the task
    gives none) and the question it answers, when the task gives one."""

    text: str
    type: str
    question: str | None = None


@dataclass(frozen=True)
class InsightTask:
    """One InsightBench task: the analyst's goal and role, the ground truth, and its database.

    ``id`` is the file stem (``flag-1``); ``tables`` the SQLite table names, in CSV order.
    """

    id: str
    goal: str
    role: str
    category: str
    description: str
    insights: tuple[Insight, ...]
    summary: str
    database_path: Path
    tables: tuple[str, ...]


def load_insightbench(
    root: Path | str | None = None, *, cache_dir: Path | str, limit: int | None = None
) -> list[InsightTask]:
    """Loads the InsightBench tasks and writes their tables into SQLite.

    Args:
        root: The folder of ``flag-N.json`` files and ``csvs/``; defaults to
            ``<data root>/insightbench``.
        cache_dir: Where the per-task SQLite files are written (created if missing).
        limit: Only the first N tasks (in numeric order).

    Returns:
        The tasks, ordered by their number.

    Raises:
        DatasetFormatError: Naming the file, if a task file or one of its CSVs is malformed.
        FileNotFoundError: If `root` holds no task files.
    """
    root = Path(root) if root is not None else default_data_root() / "insightbench"
    paths = sorted(root.glob("flag-*.json"), key=_task_number)
    if not paths:
        raise FileNotFoundError(f"no InsightBench task files (flag-N.json) under {root}")
    cache = Path(cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    tasks = [load_task(path, cache) for path in paths[:limit]]
    logger.info("insightbench: loaded %d tasks from %s", len(tasks), root)
    return tasks


def load_task(path: Path, cache_dir: Path) -> InsightTask:
    """One task file with its tables written into ``<cache_dir>/<id>.sqlite``."""
    data = _read_object(path)
    for key in REQUIRED:
        if key not in data:
            raise DatasetFormatError(path, "missing field", field=key)
    metadata = _literal(path, "metadata", data["metadata"], dict)
    for key in ("goal",):
        if not isinstance(metadata.get(key), str) or not metadata[key].strip():
            raise DatasetFormatError(path, "missing or empty", field=f"metadata.{key}")
    entries = _literal(path, "insight_list", data["insight_list"], list)
    parsed = (_insight(path, index, entry) for index, entry in enumerate(entries))
    insights = tuple(insight for insight in parsed if insight is not None)
    if len(insights) < len(entries):
        logger.warning("%s: %d empty insights left out", path.name, len(entries) - len(insights))
    if not isinstance(data["summary"], str):
        raise DatasetFormatError(path, "expected a string", field="summary")
    csvs = [_csv_file(path, key, data[key]) for key in CSV_KEYS if data.get(key)]
    database = cache_dir / f"{path.stem}.sqlite"
    tables = write_tables(path, csvs, database)
    return InsightTask(
        id=path.stem,
        goal=metadata["goal"].strip(),
        role=str(metadata.get("role", "")).strip(),
        category=str(metadata.get("category", "")).strip(),
        description=str(metadata.get("dataset_description", "")).strip(),
        insights=insights,
        summary=data["summary"].strip(),
        database_path=database,
        tables=tables,
    )


def table_name(csv: Path) -> str:
    """The SQLite table name of a CSV: its stem, with runs of other than letters, digits and
    underscores made one underscore (``flag-14-sysuser`` -> ``flag_14_sysuser``)."""
    name = re.sub(r"[^0-9A-Za-z_]+", "_", csv.stem).strip("_") or "table"
    return f"t_{name}" if name[0].isdigit() else name


def write_tables(task_file: Path, csvs: list[Path], database: Path) -> tuple[str, ...]:
    """Each CSV as one table of ``database`` (rewritten unless newer than every CSV)."""
    import pandas as pd

    names = tuple(table_name(csv) for csv in csvs)
    newest = max(csv.stat().st_mtime for csv in csvs)
    if database.exists() and database.stat().st_mtime > newest and _has_tables(database, names):
        return names
    database.unlink(missing_ok=True)
    with closing(sqlite3.connect(database)) as connection, connection:
        for csv, name in zip(csvs, names, strict=True):
            try:
                frame = pd.read_csv(csv)
            except (ValueError, pd.errors.ParserError) as err:
                raise DatasetFormatError(csv, f"unreadable CSV of {task_file.name}: {err}") from err
            frame.to_sql(name, connection, index=False)
    return names


def _has_tables(database: Path, names: tuple[str, ...]) -> bool:
    with closing(sqlite3.connect(database)) as connection:
        found = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
    return set(names) <= found


def _read_object(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise DatasetFormatError(path, f"invalid JSON: {err}", line=err.lineno) from err
    except UnicodeDecodeError as err:
        raise DatasetFormatError(path, f"not UTF-8 text: {err}") from err
    if not isinstance(data, dict):
        raise DatasetFormatError(path, "expected a JSON object")
    return data


def _literal(path: Path, key: str, value: Any, kind: type) -> Any:
    """``value`` itself, or parsed as a Python literal when a string; of type ``kind``."""
    if isinstance(value, str) and kind is not str:
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError) as err:
            raise DatasetFormatError(path, f"not a Python literal: {err}", field=key) from err
    if not isinstance(value, kind):
        raise DatasetFormatError(path, f"expected a {kind.__name__}", field=key)
    return value


def _insight(path: Path, index: int, entry: Any) -> Insight | None:
    """The entry's insight; None when its text is empty (flag-34 has one such)."""
    field = f"insight_list[{index}]"
    if not isinstance(entry, dict):
        raise DatasetFormatError(path, "expected an object", field=field)
    text = _text(entry.get("insight"))
    if text is None:
        raise DatasetFormatError(path, "missing or not text", field=f"{field}.insight")
    if not text:
        return None
    return Insight(
        text=text,
        type=(_text(entry.get("data_type")) or "").lower(),
        question=_text(entry.get("question")) or None,
    )


def _text(value: Any) -> str | None:
    """A field's text, stripped; a quoted Python literal inside the JSON string (flag-34
    writes ``"'diagnostic'"``) unquoted. None when not a string."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    if len(text) >= 2 and text[0] in "'\"" and text[-1] == text[0]:
        try:
            literal = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            literal = None
        if isinstance(literal, str):
            return literal.strip()
    return text


def _csv_file(path: Path, key: str, value: Any) -> Path:
    if not isinstance(value, str):
        raise DatasetFormatError(path, "expected a path string", field=key)
    csv = path.parent / "csvs" / Path(value).name
    if not csv.is_file():
        raise DatasetFormatError(path, f"names a missing CSV {csv}", field=key)
    return csv


def _task_number(path: Path) -> tuple[int, str]:
    digits = re.sub(r"\D", "", path.stem)
    return (int(digits) if digits else 0, path.stem)
