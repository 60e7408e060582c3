"""`Dataset`: a named list of `Example`s plus the databases they run against."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bench.datasets.example import Example


class DatasetFormatError(ValueError):
    """A dataset file does not have the expected shape.

    Attributes:
        path: The offending file.
        line: 1-based line number, when the format is line-oriented.
        field: Dotted name of the offending field, when known.
    """

    def __init__(
        self, path: Path | str, message: str, *, line: int | None = None, field: str | None = None
    ) -> None:
        self.path = Path(path)
        self.line = line
        self.field = field
        where = f"{self.path}:{line}" if line is not None else str(self.path)
        what = f"field {field!r}: " if field else ""
        super().__init__(f"{where}: {what}{message}")


def sqlite_url(path: Path | str) -> str:
    """SQLAlchemy URL of a SQLite file, made absolute (``sqlite:////abs/path``).

    Args:
        path: Path of the SQLite file.

    Returns:
        The URL.
    """
    return f"sqlite:///{Path(path).resolve()}"


def sqlite_path(url: str) -> Path | None:
    """The file behind a SQLite SQLAlchemy URL.

    Args:
        url: A SQLAlchemy URL.

    Returns:
        The file path, or None for non-SQLite or in-memory URLs.
    """
    prefix = "sqlite:///"
    if not url.startswith(prefix) or url == prefix:
        return None
    return Path(url[len(prefix) :].split("?", 1)[0])


@dataclass
class Dataset:
    """A benchmark: examples plus the URL of each database they use.

    Attributes:
        name: Dataset name, e.g. ``"spider_dev"``.
        examples: The examples, in source order.
        databases: Database id -> SQLAlchemy URL.
    """

    name: str
    examples: list[Example]
    databases: dict[str, str] = field(default_factory=dict)

    def __iter__(self) -> Iterator[Example]:
        return iter(self.examples)

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, index: int) -> Example:
        return self.examples[index]

    def get(self, example_id: str) -> Example:
        """The example with the given id.

        Args:
            example_id: An example id.

        Returns:
            The example.

        Raises:
            KeyError: If no example has that id.
        """
        for example in self.examples:
            if example.id == example_id:
                return example
        raise KeyError(example_id)

    def filter(
        self,
        *,
        split: str | Iterable[str] | None = None,
        database: str | Iterable[str] | None = None,
        tag: str | None = None,
        exclude_ids: Iterable[str] = (),
        limit: int | None = None,
    ) -> Dataset:
        """A new dataset with the examples that pass every given condition.

        Args:
            split: Keep examples of this split (or of any of these splits).
            database: Keep examples on this database (or any of these).
            tag: Keep examples carrying this tag, e.g. ``"[TRAIT:implicit_intent]"``.
            exclude_ids: Drop examples with these ids.
            limit: Keep at most this many (the first ones, in order).

        Returns:
            The filtered dataset; `databases` keeps only the databases still used.
        """
        splits = _as_set(split)
        databases = _as_set(database)
        excluded = set(exclude_ids)
        kept = [
            ex
            for ex in self.examples
            if (splits is None or ex.split in splits)
            and (databases is None or ex.database in databases)
            and (tag is None or tag in ex.tags)
            and ex.id not in excluded
        ]
        if limit is not None:
            kept = kept[: max(limit, 0)]
        used = {ex.database for ex in kept}
        dbs = {db: url for db, url in self.databases.items() if db in used}
        return Dataset(name=self.name, examples=kept, databases=dbs)


def _as_set(value: str | Iterable[str] | None) -> set[str] | None:
    if value is None:
        return None
    return {value} if isinstance(value, str) else set(value)
