"""Checks, before a run asks anything, that every database its questions use can be opened.

A question whose database cannot be opened is not scored; a run over a dataset whose database
file is missing would otherwise answer every question, score none and print a table of zeros.
``require_databases`` refuses such a run up front, naming each database and why: no URL, a
SQLite file that is not there or holds no tables, or a server that cannot be reached.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from bench.datasets.dataset import Dataset, sqlite_path
from bench.datasets.example import Example
from kb.target.database import Database
from kb.target.readonly import TargetConnectionError

PROBE_TIMEOUT_S = 10.0


class MissingDatabaseError(ValueError):
    """Some databases the questions use cannot be opened.

    Attributes:
        dataset: The dataset's name.
        problems: Database id -> why it cannot be opened.
    """

    def __init__(self, dataset: str, problems: dict[str, str]) -> None:
        self.dataset, self.problems = dataset, problems
        lines = "\n".join(f"  {db}: {why}" for db, why in problems.items())
        count = f"{len(problems)} database{'s' if len(problems) > 1 else ''}"
        super().__init__(f"{count} of {dataset} cannot be opened; nothing was asked:\n{lines}")


def database_problems(
    examples: Iterable[Example], databases: dict[str, str], *, source: Path | None = None
) -> dict[str, str]:
    """Why each database the examples use cannot be opened (those that can are left out).

    Args:
        examples: The questions.
        databases: Database id -> URL, for examples without their own ``database_url``.
        source: The dataset file, when it is one: a JSONL dataset looks for ``<id>.sqlite``
            beside it, and the message names that file.

    Returns:
        Database id -> reason, sorted by id.
    """
    used = {(e.database, e.database_url or databases.get(e.database)) for e in examples}
    problems: dict[str, str] = {}
    for database, url in sorted(used, key=lambda pair: (pair[0], pair[1] or "")):
        if database not in problems and (reason := _url_problem(url, database, source)):
            problems[database] = reason
    return problems


def require_databases(dataset: Dataset, *, source: Path | None = None) -> None:
    """Raises unless every database of ``dataset`` can be opened.

    Args:
        dataset: The questions a run needs: those it asks and those it learns from.
        source: The dataset file, when it is one (see `database_problems`).

    Raises:
        MissingDatabaseError: Naming each database that cannot be opened and why.
    """
    problems = database_problems(dataset.examples, dataset.databases, source=source)
    if problems:
        raise MissingDatabaseError(dataset.name, problems)


def _url_problem(url: str | None, database: str, source: Path | None) -> str | None:
    if url is None:
        if source is not None and source.is_file():
            beside = source.parent / f"{database}.sqlite"
            return f"no database URL, and no {beside} beside {source.name}"
        return "no database URL"
    path = sqlite_path(url)
    if path is not None and not path.is_file():
        return f"SQLite file not found: {path}"
    try:
        with Database(url, timeout_s=PROBE_TIMEOUT_S) as opened:
            tables = opened.tables()
    except (TargetConnectionError, ValueError) as exc:
        return f"cannot be opened ({exc})"
    if not tables:
        return f"has no tables: {path or url}"
    return None
