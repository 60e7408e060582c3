"""Checks that gold SQL actually runs: each gold query is executed once against its database.

Only SQLite databases are checked (opened read-only); examples on other databases are skipped
with a warning. Loaders never execute SQL themselves; they call this only when asked to
(``drop_failing_gold=True``).
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Iterator
from contextlib import ExitStack, closing, contextmanager
from pathlib import Path

from bench.datasets.dataset import Dataset, sqlite_path

logger = logging.getLogger(__name__)


def gold_errors(
    dataset: Dataset, *, all_variants: bool = True, timeout_s: float = 30.0
) -> dict[str, str]:
    """Executes the gold SQL of every example and collects the failures.

    Identical (database, SQL) pairs are executed only once.

    Args:
        dataset: The dataset to check.
        all_variants: Check every gold variant; when False, only the canonical one.
        timeout_s: Time limit per query; a query that runs longer counts as failing.

    Returns:
        Example id -> error message of its first failing gold query, in dataset order.
    """
    results: dict[tuple[Path, str], str | None] = {}
    errors: dict[str, str] = {}
    skipped = 0
    with ExitStack() as stack:
        connections: dict[Path, sqlite3.Connection] = {}
        for example in dataset:
            path = sqlite_path(example.database_url or "")
            if path is None:
                skipped += 1
                continue
            if not path.is_file():
                errors[example.id] = f"database file not found: {path}"
                continue
            if path not in connections:
                uri = f"{path.resolve().as_uri()}?mode=ro"
                connections[path] = stack.enter_context(closing(sqlite3.connect(uri, uri=True)))
            for sql in example.gold_sql if all_variants else example.gold_sql[:1]:
                if (path, sql) not in results:
                    results[path, sql] = _run(connections[path], sql, timeout_s)
                if results[path, sql] is not None:
                    errors[example.id] = f"{results[path, sql]} (in: {sql})"
                    break
    if skipped:
        logger.warning(
            "%s: %d examples not on a SQLite file were not checked", dataset.name, skipped
        )
    logger.info(
        "%s: %d of %d examples have failing gold SQL", dataset.name, len(errors), len(dataset)
    )
    return errors


def validate_gold(
    dataset: Dataset, *, all_variants: bool = True, timeout_s: float = 30.0
) -> list[str]:
    """Ids of the examples whose gold SQL fails to execute (see `gold_errors`).

    Args:
        dataset: The dataset to check.
        all_variants: Check every gold variant; when False, only the canonical one.
        timeout_s: Time limit per query.

    Returns:
        The failing example ids, in dataset order.
    """
    return list(gold_errors(dataset, all_variants=all_variants, timeout_s=timeout_s))


def _run(connection: sqlite3.Connection, sql: str, timeout_s: float) -> str | None:
    try:
        with _deadline(connection, timeout_s), closing(connection.execute(sql)) as cursor:
            for _ in cursor:
                pass
    except sqlite3.Error as err:
        return f"{type(err).__name__}: {err}"
    return None


@contextmanager
def _deadline(connection: sqlite3.Connection, timeout_s: float) -> Iterator[None]:
    deadline = time.monotonic() + timeout_s
    connection.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    try:
        yield
    finally:
        connection.set_progress_handler(None, 0)
