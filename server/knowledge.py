"""Knowledge reads and writes on behalf of a caller: access checks, the write, the audit row.

Routes and jobs both go through :class:`KnowledgeService`, so every write is checked by
:mod:`server.access`, recorded in the audit log, and followed by an index refresh (the
writer's next search sees the change).

Every write is checked twice: the entry as it would be stored (:func:`~server.access.
check_writable`: layer, owner, auths, and the rule that only admin keys and keys without a
workspace write the global layer), and the entry already stored under the same id
(:func:`~server.access.check_replaceable`), read without the caller's visibility filter and
inactive ones included, because ``auths`` is not part of the id: a line without auths must not
replace an entry whose auths keep the caller out. How a write to an id the caller cannot see
is answered, without revealing that it exists:

- ``PATCH`` and ``DELETE``: 404, the same answer as for an unknown id;
- ``POST`` and import: 403 ``entry <id> cannot be written with your key`` (never 409
  "exists"); nothing is written, no overlay entry is made in its place.

An import is all or nothing: the first refused line refuses the whole file, naming its line
number, before anything is written.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from indices.index_set import IndexSet
from kb.errors import KnowledgeNotFoundError
from kb.filters import UKFFilter
from kb.store import KnowledgeStore
from server.access import AccessDeniedError, check_replaceable, check_writable, export_reader
from server.audit import AuditLog
from server.auth import Identity
from ukf import IDENTITY_FIELDS, BaseUKF, UKFError

log = logging.getLogger(__name__)
COMPUTED_FIELDS = frozenset({"id", "content_hash"})


class EntryExistsError(RuntimeError):
    """``POST`` of an entry whose id is already stored (409)."""


class FrozenFieldsError(UKFError):
    """A ``PATCH`` tried to change identity fields (422)."""


class KnowledgeService:
    """Knowledge operations with access control and auditing."""

    def __init__(self, store: KnowledgeStore, audit: AuditLog, indices: IndexSet) -> None:
        self.store, self.audit, self.indices = store, audit, indices

    # ------------------------------------------------------------------ reads
    def get(self, ukf_id: str, identity: Identity) -> BaseUKF:
        """The entry if the caller may see it; :class:`KnowledgeNotFoundError` otherwise."""
        return self.store.get(ukf_id, reader=identity.reader)

    def list(self, identity: Identity, flt: UKFFilter, *, limit: int, offset: int) -> list[BaseUKF]:
        return self.store.search(flt, reader=identity.reader, limit=limit, offset=offset)

    def count(self, identity: Identity, flt: UKFFilter) -> int:
        return self.store.count(flt, reader=identity.reader)

    def export_lines(self, identity: Identity, flt: UKFFilter) -> Iterator[str]:
        """Canonical JSON lines of the entries matching ``flt`` (admins: all), in id order."""
        for entry in self.store.iterate(flt, reader=export_reader(identity)):
            yield entry.to_json() + "\n"

    # ----------------------------------------------------------------- writes
    def create(self, data: Mapping[str, Any], identity: Identity) -> BaseUKF:
        """Store a new entry; ``creator`` and ``source`` default to the caller and ``user``."""
        payload = dict(data)
        payload.setdefault("creator", identity.user)
        payload.setdefault("source", "user")
        try:
            entry = BaseUKF.from_dict(payload)
        except ValidationError as exc:
            raise _validation_error(exc) from None
        check_writable(entry, identity)
        stored = self.store.get_many([entry.id]).get(entry.id)
        if stored is not None:
            check_replaceable(stored, identity)  # hidden from the caller: 403, not 409
            raise EntryExistsError(f"entry {entry.id} exists already; PATCH it instead")
        version = self.store.upsert(entry)
        self._audit("create", identity, [entry.id], version, {"type": entry.type})
        return entry

    def update(self, ukf_id: str, changes: Mapping[str, Any], identity: Identity) -> BaseUKF:
        """Change non-identity fields of a visible, writable entry."""
        frozen = sorted((set(changes) & set(IDENTITY_FIELDS)) | (set(changes) & COMPUTED_FIELDS))
        if frozen:
            raise FrozenFieldsError(
                f"field(s) {frozen} cannot change (they make the entry's id); "
                "POST a new version of the entry instead"
            )
        existing = self.get(ukf_id, identity)
        check_writable(existing, identity)
        data = existing.model_dump()
        data.update(changes)
        try:
            updated = type(existing).model_validate(data)
        except ValidationError as exc:
            raise _validation_error(exc) from None
        check_writable(updated, identity)
        version = self.store.upsert(updated)
        self._audit("update", identity, [ukf_id], version, {"fields": sorted(changes)})
        return updated

    def delete(self, ukf_id: str, identity: Identity) -> int:
        """Mark a visible, writable entry inactive (lazy delete); return the store version."""
        existing = self.get(ukf_id, identity)
        check_writable(existing, identity)
        version = self.store.remove(ukf_id)
        self._audit("delete", identity, [ukf_id], version, {"type": existing.type})
        return version

    def import_entries(
        self,
        numbered: Sequence[tuple[int, BaseUKF]],
        identity: Identity,
        *,
        source: str,
        job_id: str | None = None,
    ) -> dict[str, Any]:
        """Store validated entries, given with their line numbers, in one transaction after
        checking every one and every stored entry it would replace; a refusal names the line
        and nothing is written."""
        entries = [entry for _line, entry in numbered]
        stored = self.store.get_many(entry.id for entry in entries)  # all layers, inactive too
        for line, entry in numbered:
            try:
                check_writable(entry, identity)
                if entry.id in stored:
                    check_replaceable(stored[entry.id], identity)
            except AccessDeniedError as exc:
                raise AccessDeniedError(f"line {line}: {exc}; nothing was imported") from None
        version = self.store.upsert_many(entries) if entries else self.store.version
        ids = [entry.id for entry in entries]
        self._audit("import", identity, ids, version, {"source": source}, job_id=job_id)
        return {"imported": len(ids), "store_version": version}

    def record_job_writes(
        self,
        action: str,
        identity: Identity,
        ids: Sequence[str],
        version: int,
        detail: dict[str, Any],
        job_id: str,
    ) -> None:
        """Audit writes a job made through library code (profiling, ...)."""
        self._audit(action, identity, ids, version, detail, job_id=job_id)

    def _audit(
        self,
        action: str,
        identity: Identity,
        ids: Sequence[str],
        version: int,
        detail: dict[str, Any],
        *,
        job_id: str | None = None,
    ) -> None:
        self.audit.record(
            action, identity, ids, store_version=version, job_id=job_id, detail=detail
        )
        try:
            self.indices.refresh(wait=True)
        except Exception:  # the refresher thread catches up; the write itself succeeded
            log.exception("index refresh after %s failed", action)


def _validation_error(exc: ValidationError) -> UKFError:
    first = exc.errors()[0]
    location = ".".join(str(part) for part in first["loc"]) or "(entry)"
    more = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return UKFError(f"field {location!r}: {first['msg']}{more}")


__all__ = [
    "EntryExistsError",
    "FrozenFieldsError",
    "KnowledgeNotFoundError",
    "KnowledgeService",
]
