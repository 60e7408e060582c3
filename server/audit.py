"""The audit log: who wrote which knowledge, when, how, and at which store version.

One row per write operation (``audit_log``) and one row per entry it touched
(``audit_log_entries``), so both "what did this import do" and "who changed entry X" are
single queries. Every knowledge write of the HTTP API and of the jobs is recorded here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, insert, select

from kb import schema
from kb.engine import read_transaction, write_transaction
from server.auth import Identity

_A, _AE = schema.audit_log, schema.audit_log_entries
BATCH = 1000


@dataclass(frozen=True)
class AuditRecord:
    id: int
    at: datetime
    action: str
    key_id: str | None
    user: str | None
    job_id: str | None
    entry_count: int
    store_version: int | None
    detail: dict[str, Any] = field(default_factory=dict)
    ukf_ids: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "at": self.at,
            "action": self.action,
            "key_id": self.key_id,
            "user": self.user,
            "job_id": self.job_id,
            "entry_count": self.entry_count,
            "store_version": self.store_version,
            "detail": self.detail,
            "ukf_ids": self.ukf_ids,
        }


class AuditLog:
    """Append-only record of knowledge writes (same database as the store)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def record(
        self,
        action: str,
        actor: Identity | None,
        ukf_ids: Iterable[str],
        *,
        store_version: int | None = None,
        job_id: str | None = None,
        detail: dict[str, Any] | None = None,
    ) -> int:
        """Append one operation; return its audit id."""
        ids = list(dict.fromkeys(ukf_ids))
        with write_transaction(self._engine) as conn:
            audit_id = conn.execute(
                insert(_A)
                .values(
                    at=datetime.now(UTC),
                    action=action,
                    key_id=actor.key_id if actor else None,
                    user_name=actor.user if actor else None,
                    job_id=job_id,
                    entry_count=len(ids),
                    store_version=store_version,
                    detail=json.dumps(detail or {}, sort_keys=True, default=str),
                )
                .returning(_A.c.id)
            ).scalar_one()
            for start in range(0, len(ids), BATCH):
                rows = [{"audit_id": audit_id, "ukf_id": uid} for uid in ids[start : start + BATCH]]
                conn.execute(insert(_AE), rows)
        return int(audit_id)

    def list(
        self,
        *,
        ukf_id: str | None = None,
        action: str | None = None,
        limit: int = 100,
        with_ids: bool = True,
    ) -> list[AuditRecord]:
        """Newest first; ``ukf_id`` keeps operations that touched that entry."""
        query = select(_A).order_by(_A.c.id.desc()).limit(limit)
        if ukf_id is not None:
            query = query.where(_A.c.id.in_(select(_AE.c.audit_id).where(_AE.c.ukf_id == ukf_id)))
        if action is not None:
            query = query.where(_A.c.action == action)
        with read_transaction(self._engine) as conn:
            rows = conn.execute(query).all()
            ids: dict[int, list[str]] = {row.id: [] for row in rows}
            if with_ids and ids:
                for entry in conn.execute(
                    select(_AE.c.audit_id, _AE.c.ukf_id)
                    .where(_AE.c.audit_id.in_(list(ids)))
                    .order_by(_AE.c.audit_id, _AE.c.ukf_id)
                ):
                    ids[entry.audit_id].append(entry.ukf_id)
        return [
            AuditRecord(
                id=row.id,
                at=row.at if row.at.tzinfo else row.at.replace(tzinfo=UTC),
                action=row.action,
                key_id=row.key_id,
                user=row.user_name,
                job_id=row.job_id,
                entry_count=row.entry_count,
                store_version=row.store_version,
                detail=json.loads(row.detail),
                ukf_ids=ids[row.id],
            )
            for row in rows
        ]


def cli_actor() -> str:
    """Who a CLI command's writes are recorded as: ``cli:<login name>`` (``cli:unknown`` in a
    container without a passwd entry)."""
    import getpass

    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):
        return "cli:unknown"
