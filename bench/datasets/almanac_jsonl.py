"""Almanac's own dataset format: JSON Lines, one `Example` per line.

A line looks like::

    {"id": "sales-001", "question": "Revenue last month?", "database": "sales",
     "context": {"query_time": "2024-05-01T09:30:00+00:00", "user_profile": {"region": "EU"}},
     "gold_sql": ["SELECT ..."], "gold_sql_by_dialect": {"postgresql": ["SELECT ..."]},
     "order_relevant": false, "tags": ["[TRAIT:implicit_intent]"], "difficulty": "medium",
     "split": "test"}

Only ``id``, ``question``, ``database`` and ``gold_sql`` are required; the other fields are those
of `Example` (``database_url``, ``evidence`` and ``metadata`` included) and unknown fields are
errors. `write_jsonl` followed by `read_jsonl` gives back equal examples, and writing those again
gives the same bytes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from bench.datasets.dataset import Dataset, DatasetFormatError
from bench.datasets.example import Example

logger = logging.getLogger(__name__)

ALWAYS_WRITTEN = ("id", "question", "database", "gold_sql", "order_relevant")


def read_jsonl(path: Path | str) -> list[Example]:
    """Reads an Almanac JSONL file. Blank lines are ignored.

    Args:
        path: The file.

    Returns:
        The examples, in file order.

    Raises:
        DatasetFormatError: For a malformed line, naming the file, the line number and, when the
            line is valid JSON, the offending field; also for a repeated id.
    """
    path = Path(path)
    examples: list[Example] = []
    lines_by_id: dict[str, int] = {}
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            example = _parse_line(path, number, line)
            if example.id in lines_by_id:
                message = f"duplicate id {example.id!r} (first on line {lines_by_id[example.id]})"
                raise DatasetFormatError(path, message, line=number, field="id")
            lines_by_id[example.id] = number
            examples.append(example)
    return examples


def write_jsonl(examples: Iterable[Example], path: Path | str) -> int:
    """Writes examples as Almanac JSONL (UTF-8, one compact JSON object per line).

    Fields at their empty default (None, ``{}``, ``[]``) are left out, except `ALWAYS_WRITTEN`.

    Args:
        examples: The examples; their ``metadata`` must be JSON-serialisable.
        path: The file to write (replaced if it exists; parent folders are created).

    Returns:
        The number of examples written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", encoding="utf-8", newline="\n") as out:
        for example in examples:
            out.write(json.dumps(to_record(example), ensure_ascii=False) + "\n")
            count += 1
    logger.info("wrote %d examples to %s", count, path)
    return count


def to_record(example: Example) -> dict[str, Any]:
    """The JSON object `write_jsonl` writes for one example.

    Args:
        example: The example.

    Returns:
        A JSON-ready dict without empty optional fields.
    """
    record = example.model_dump(mode="json")
    context = {k: v for k, v in record.pop("context").items() if v not in (None, {})}
    if context:
        record["context"] = context
    return {k: v for k, v in record.items() if k in ALWAYS_WRITTEN or v not in (None, {}, [])}


def load_almanac_jsonl(
    path: Path | str, *, name: str | None = None, databases: dict[str, str] | None = None
) -> Dataset:
    """Loads an Almanac JSONL file as a dataset.

    Args:
        path: The file.
        name: Dataset name; defaults to the file's stem.
        databases: Database id -> SQLAlchemy URL, filling ``database_url`` where a line has none.
            A database id with no URL either way is looked for as ``<id>.sqlite`` next to the
            file (AutoFin writes ``questions.jsonl`` beside ``autofin.sqlite``).

    Returns:
        The dataset; its `databases` holds every database id that has a URL.

    Raises:
        DatasetFormatError: For a malformed line, or one database id with two different URLs.
    """
    path = Path(path)
    urls = dict(databases or {})
    examples = read_jsonl(path)
    for index, example in enumerate(examples):
        url = example.database_url
        if url is None and example.database in urls:
            examples[index] = example.model_copy(update={"database_url": urls[example.database]})
        elif url is not None and urls.setdefault(example.database, url) != url:
            message = f"database {example.database!r} has two URLs: {urls[example.database]}, {url}"
            raise DatasetFormatError(path, message, field="database_url")
    for index, example in enumerate(examples):
        beside = path.parent / f"{example.database}.sqlite"
        if example.database_url is None and example.database not in urls and beside.exists():
            urls[example.database] = f"sqlite:///{beside.resolve()}"
        if example.database_url is None and example.database in urls:
            examples[index] = example.model_copy(update={"database_url": urls[example.database]})
    used = {ex.database for ex in examples}
    dbs = {db: url for db, url in urls.items() if db in used}
    return Dataset(name=name or path.stem, examples=examples, databases=dbs)


def _parse_line(path: Path, number: int, line: str) -> Example:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as err:
        raise DatasetFormatError(path, f"invalid JSON: {err.msg}", line=number) from err
    if not isinstance(record, dict):
        raise DatasetFormatError(path, "expected a JSON object", line=number)
    try:
        return Example.model_validate(record)
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or None
        more = f" (and {err.error_count() - 1} more errors)" if err.error_count() > 1 else ""
        raise DatasetFormatError(path, first["msg"] + more, line=number, field=field) from err
