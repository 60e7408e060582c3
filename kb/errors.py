"""Errors of the knowledge store. Each carries the offending id, field or line."""

from __future__ import annotations


class StoreError(RuntimeError):
    """Base class of knowledge-store errors."""


class KnowledgeNotFoundError(StoreError, KeyError):
    """One or more ids are not in the store (or not visible to the reader)."""

    def __init__(self, ids: list[str]) -> None:
        self.ids = ids
        super().__init__(
            f"unknown knowledge id(s): {', '.join(ids[:10])}"
            + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
        )

    def __str__(self) -> str:
        return str(self.args[0])


class JSONLImportError(StoreError, ValueError):
    """A JSON Lines import failed; nothing was written. ``line`` is 1-based."""

    def __init__(self, source: str, line: int, message: str) -> None:
        self.source, self.line = source, line
        super().__init__(f"{source}, line {line}: {message}")


class SchemaVersionError(StoreError):
    """The store was written by a newer Almanac than this one."""
