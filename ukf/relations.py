"""Relationship and authority records carried by UKF entries."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Related(BaseModel):
    """A relation tuple ``(subject, relation, object, relation_id, resources)``.

    Subject and object are UKF ids (or, for targets outside the store, any stable name). The
    relation is a verb such as ``column_of``, ``value_of``, ``joins`` or ``uses_column``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    subject: str = Field(min_length=1)
    relation: str = Field(min_length=1)
    object: str = Field(min_length=1)
    relation_id: str | None = None
    resources: dict[str, Any] = Field(default_factory=dict)


class Auth(BaseModel):
    """Grants ``authority`` (``read``, ``write`` or ``admin``) on an entry to a user or group."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    user: str = Field(min_length=1)
    authority: str = Field(default="read", pattern=r"^(read|write|admin)$")
