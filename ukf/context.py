"""Who asks, when, in which profile and on which database: the context of one question.

:class:`QueryContext` is built once where a question enters (the HTTP route, the CLI, a
benchmark example) and passed unchanged down to the retriever and the triggers. Only its
*asked-in* part (``query_time``, ``user_profile``) is data: it is what an experience stores
(:meth:`QueryContext.record`) and what a dataset serializes; ``reader``, ``database`` and
``tags`` describe the asking and are never serialized.

``reader=None`` means system access: every entry is visible (benchmarks, offline jobs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

RECORD_FIELDS = frozenset({"query_time", "user_profile"})
_TIME = TypeAdapter(datetime)


@dataclass(frozen=True)
class Reader:
    """A user reading the knowledge: their name, groups and current workspace."""

    user: str | None = None
    groups: frozenset[str] = field(default_factory=frozenset)
    workspace: str | None = None

    @property
    def principals(self) -> frozenset[str]:
        return self.groups | ({self.user} if self.user else set())


class QueryContext(BaseModel):
    """The context of one question (immutable; derive a changed copy with :meth:`on`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    query_time: datetime | None = None
    user_profile: dict[str, Any] = Field(default_factory=dict)
    reader: Reader | None = Field(default=None, exclude=True)
    database: str | None = Field(default=None, exclude=True)
    tags: dict[str, Any] = Field(default_factory=dict, exclude=True)  # extra facet filters

    def on(self, database: str) -> QueryContext:
        """This context, asked on ``database``."""
        return self if database == self.database else self.model_copy(update={"database": database})

    @property
    def user(self) -> str | None:
        return self.reader.user if self.reader else None

    @property
    def workspace(self) -> str | None:
        return self.reader.workspace if self.reader else None

    @property
    def aware_query_time(self) -> datetime | None:
        """``query_time`` as an aware datetime (a naive one is read as UTC)."""
        return aware(self.query_time)

    def query_time_text(self) -> str:
        """``query_time`` as its JSON form ("" when unset): what prompts and records show."""
        return "" if self.query_time is None else _TIME.dump_python(self.query_time, mode="json")

    def record(self) -> dict[str, Any]:
        """The asked-in part as JSON data: ``{"query_time": ..., "user_profile": {...}}``."""
        return self.model_dump(mode="json")

    @property
    def has_record(self) -> bool:
        return self.query_time is not None or bool(self.user_profile)


def aware(value: datetime | None) -> datetime | None:
    """``value`` with a time zone (naive datetimes are read as UTC)."""
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


def parse_time(value: str | datetime) -> datetime:
    """An ISO string (or a datetime) as an aware datetime; raises ``ValueError`` otherwise."""
    parsed = datetime.fromisoformat(value) if isinstance(value, str) else value
    if not isinstance(parsed, datetime):
        raise ValueError(f"not a time: {value!r}")
    return aware(parsed)  # type: ignore[return-value]
