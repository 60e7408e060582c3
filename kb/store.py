"""``KnowledgeStore``: every UKF entry of Almanac, in SQLite or PostgreSQL.

One code path serves both backends (SQLAlchemy 2 Core). Every write runs in one transaction
and bumps the store's monotonic ``version``; each written row records that version in ``seq``,
so indices can reload only what changed (:meth:`KnowledgeStore.changes_since`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, delete, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url

from kb import schema
from kb.engine import create_store_engine, read_transaction, write_transaction
from kb.errors import KnowledgeNotFoundError
from kb.filters import UKFFilter
from kb.jsonl import JSONLSource, JSONLTarget, read_jsonl, write_jsonl_lines
from kb.migrations import migrate
from kb.planner import PlannerStats
from kb.rows import RowBatch, document_from_data, entry_from_data
from kb.visibility import Reader, overlay_clause, visible_clause
from ukf import BaseUKF

log = logging.getLogger(__name__)
DEFAULT_BATCH = 1000
_E = schema.entries


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class KnowledgeStore:
    """UKF storage with facet tables, visibility, versioning and JSONL import/export.

    Args:
        url: SQLAlchemy URL, e.g. ``sqlite:////data/almanac/knowledge.db`` or
            ``postgresql+psycopg://user@host/db``. The schema is created or migrated on open.
        echo: log every SQL statement (debugging).
    """

    def __init__(self, url: str, *, echo: bool = False) -> None:
        self.url = url
        self.backend = make_url(url).get_backend_name()
        self._engine = create_store_engine(url, echo=echo)
        with write_transaction(self._engine) as conn:
            self.schema_version = migrate(conn)
        self._upsert_statement = self._build_upsert()
        self.planner = PlannerStats(self._engine, self.backend)
        self.planner.open()

    def __repr__(self) -> str:
        return f"KnowledgeStore({make_url(self.url).render_as_string(hide_password=True)!r})"

    def close(self) -> None:
        self._engine.dispose()

    def __enter__(self) -> KnowledgeStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------------- version
    @property
    def version(self) -> int:
        """Monotonic counter, bumped by every write transaction."""
        with read_transaction(self._engine) as conn:
            return self._read_version(conn)

    @staticmethod
    def _read_version(conn: Connection) -> int:
        query = select(schema.store_meta.c.value).where(schema.store_meta.c.key == "version")
        return int(conn.execute(query).scalar_one())

    @staticmethod
    def _bump_version(conn: Connection) -> int:
        meta = schema.store_meta
        conn.execute(update(meta).where(meta.c.key == "version").values(value=meta.c.value + 1))
        return KnowledgeStore._read_version(conn)

    def changes_since(self, version: int) -> list[str]:
        """Ids of entries written after ``version`` (purged entries are not listed)."""
        with read_transaction(self._engine) as conn:
            rows = conn.execute(select(_E.c.id).where(_E.c.seq > version).order_by(_E.c.seq))
            return [row.id for row in rows]

    def written_since(self, seq: int) -> list[tuple[int, str, str]]:
        """(seq, id, type) of the entries written after ``seq``, in write order: one indexed
        read that tells a cache whether anything it holds moved (purged entries are not
        listed)."""
        with read_transaction(self._engine) as conn:
            rows = conn.execute(
                select(_E.c.seq, _E.c.id, _E.c.type).where(_E.c.seq > seq).order_by(_E.c.seq)
            )
            return [(row.seq, row.id, row.type) for row in rows]

    # ------------------------------------------------------------------------ reads
    def get(self, ukf_id: str, *, reader: Reader | None = None) -> BaseUKF:
        """The entry ``ukf_id``; :class:`KnowledgeNotFoundError` when absent or invisible."""
        found = self.get_many([ukf_id], reader=reader)
        if ukf_id not in found:
            raise KnowledgeNotFoundError([ukf_id])
        return found[ukf_id]

    def get_many(self, ids: Iterable[str], *, reader: Reader | None = None) -> dict[str, BaseUKF]:
        """Entries by id (missing or invisible ids are left out), in the order asked."""
        return {uid: entry_from_data(data) for uid, data in self._stored(ids, reader).items()}

    def get_documents(
        self, ids: Iterable[str], *, reader: Reader | None = None
    ) -> dict[str, dict[str, Any]]:
        """Like :meth:`get_many`, but each entry as its stored JSON document (what
        ``entry.to_dict()`` gives), not rebuilt as a model: for reads that only serialize."""
        return {uid: document_from_data(data) for uid, data in self._stored(ids, reader).items()}

    def _stored(self, ids: Iterable[str], reader: Reader | None) -> dict[str, str]:
        wanted = list(dict.fromkeys(ids))
        found: dict[str, str] = {}
        with read_transaction(self._engine) as conn:
            for chunk in _chunks(wanted, DEFAULT_BATCH):
                query = select(_E.c.id, _E.c.data).where(
                    _E.c.id.in_(chunk), visible_clause(_E, reader)
                )
                found.update({row.id: row.data for row in conn.execute(query)})
        return {uid: found[uid] for uid in wanted if uid in found}

    def exists(self, ukf_id: str) -> bool:
        with read_transaction(self._engine) as conn:
            return conn.execute(select(_E.c.id).where(_E.c.id == ukf_id)).first() is not None

    def _where(self, flt: UKFFilter, reader: Reader | None) -> Any:
        return (flt.clause(_E), visible_clause(_E, reader), overlay_clause(_E, reader))

    def iterate(
        self,
        filter: UKFFilter | None = None,
        *,
        reader: Reader | None = None,
        batch_size: int = 500,
        **criteria: Any,
    ) -> Iterator[BaseUKF]:
        """Stream matching entries in id order (keyset pages of ``batch_size``).

        ``criteria`` are :class:`UKFFilter` fields: ``type``, ``collection``, ``workspace``,
        ``owner``, ``tags``, ``active`` (default True; None for all), ...
        """
        flt = UKFFilter.build(filter, **criteria)
        yield from map(entry_from_data, self._iterate_documents(flt, reader, batch_size))

    def search(
        self,
        filter: UKFFilter | None = None,
        *,
        reader: Reader | None = None,
        limit: int = 100,
        offset: int = 0,
        **criteria: Any,
    ) -> list[BaseUKF]:
        """Matching entries, highest ``priority`` first (ties by id)."""
        flt = UKFFilter.build(filter, **criteria)
        query = (
            select(_E.c.data)
            .where(*self._where(flt, reader))
            .order_by(_E.c.priority.desc(), _E.c.id)
            .limit(limit)
            .offset(offset)
        )
        with read_transaction(self._engine) as conn:
            return [entry_from_data(row.data) for row in conn.execute(query)]

    def search_ids(
        self,
        filter: UKFFilter | None = None,
        *,
        reader: Reader | None = None,
        limit: int | None = 100,
        **criteria: Any,
    ) -> list[str]:
        """Like :meth:`search` but only ids (cheap: no documents are parsed)."""
        flt = UKFFilter.build(filter, **criteria)
        query = (
            select(_E.c.id)
            .where(*self._where(flt, reader))
            .order_by(_E.c.priority.desc(), _E.c.id)
            .limit(limit)
        )
        with read_transaction(self._engine) as conn:
            return [row.id for row in conn.execute(query)]

    def count(
        self, filter: UKFFilter | None = None, *, reader: Reader | None = None, **criteria: Any
    ) -> int:
        flt = UKFFilter.build(filter, **criteria)
        query = select(func.count()).select_from(_E).where(*self._where(flt, reader))
        with read_transaction(self._engine) as conn:
            return int(conn.execute(query).scalar_one())

    def min_priority(
        self, filter: UKFFilter | None = None, *, reader: Reader | None = None, **criteria: Any
    ) -> int | None:
        """The lowest ``priority`` among matching entries (None when nothing matches)."""
        flt = UKFFilter.build(filter, **criteria)
        query = select(func.min(_E.c.priority)).where(*self._where(flt, reader))
        with read_transaction(self._engine) as conn:
            value = conn.execute(query).scalar_one()
        return None if value is None else int(value)

    # ----------------------------------------------------------------------- writes
    def upsert(self, entry: BaseUKF) -> int:
        """Insert or replace one entry; return the new store version."""
        return self.upsert_many([entry])

    def upsert_many(self, entries: Iterable[BaseUKF], *, batch_size: int = DEFAULT_BATCH) -> int:
        """Insert or replace entries in one transaction; return the new store version.

        Within the call, the last entry with a given id wins.
        """
        unique = list({entry.id: entry for entry in entries}.values())
        with write_transaction(self._engine) as conn:
            seq = self._bump_version(conn)
            for chunk in _chunks(unique, batch_size):
                self._write_batch(conn, chunk, seq)
        log.debug("upserted %d entries at version %d", len(unique), seq)
        self.planner.note_writes(len(unique))
        return seq

    def compare_and_set(
        self, pairs: Mapping[str, tuple[BaseUKF, BaseUKF]]
    ) -> tuple[list[str], list[str]]:
        """Write ``new`` for each ``id: (read, new)`` whose stored entry still equals ``read``,
        all in one transaction; return (ids written, ids whose entry changed or went since it
        was read: nothing written for them, for the caller to read afresh and decide again).

        The version is bumped before the entries are read again, as every write does first: on
        PostgreSQL that takes the version row's lock, so no other store write commits between
        the comparison and the write; on SQLite the write transaction holds the database's
        write lock throughout. A read-change-write of one field (a profile, a counter) thus
        loses nothing another writer changed in between.
        """
        if not pairs:
            return [], []
        for uid, (read, new) in pairs.items():
            if read.id != uid or new.id != uid:
                raise ValueError(f"compare_and_set: {uid!r} is paired with {read.id!r}, {new.id!r}")
        written: list[BaseUKF] = []
        conflicts: list[str] = []
        with write_transaction(self._engine) as conn:
            seq = self._bump_version(conn)
            query = select(_E.c.id, _E.c.data).where(_E.c.id.in_(list(pairs)))
            stored = {row.id: row.data for row in conn.execute(query)}
            for uid, (read, new) in pairs.items():
                data = stored.get(uid)
                if data is None or entry_from_data(data).to_dict() != read.to_dict():
                    conflicts.append(uid)
                else:
                    written.append(new)
            if written:
                self._write_batch(conn, written, seq)
        if written:
            self.planner.note_writes(len(written))
        return [e.id for e in written], conflicts

    def _write_batch(self, conn: Connection, chunk: Sequence[BaseUKF], seq: int) -> None:
        batch = RowBatch()
        for entry in chunk:
            batch.add(entry, seq)
        for table in schema.FACET_TABLES:
            conn.execute(delete(table).where(table.c.ukf_id.in_(batch.ids)))
        conn.execute(self._upsert_statement, batch.entries)
        for table, rows in (
            (schema.tags, batch.tags),
            (schema.synonyms, batch.synonyms),
            (schema.related, batch.related),
            (schema.auths, batch.auths),
        ):
            if rows:
                conn.execute(table.insert(), rows)

    def _build_upsert(self) -> Any:
        dialect = postgresql if self.backend == "postgresql" else sqlite
        statement = dialect.insert(_E)
        changed = {c.name: statement.excluded[c.name] for c in _E.c if c.name != "id"}
        return statement.on_conflict_do_update(index_elements=[_E.c.id], set_=changed)

    def remove(self, ids: str | Iterable[str]) -> int:
        """Lazy delete: mark entries inactive (``inactive_mark``); return the new store version.

        Raises :class:`~kb.errors.KnowledgeNotFoundError` (a ``KeyError``) naming every unknown
        id; then nothing is marked and the version does not move.
        """
        return self._set_inactive(ids, True)

    def restore(self, ids: str | Iterable[str]) -> int:
        """Undo :meth:`remove` for entries not yet purged."""
        return self._set_inactive(ids, False)

    def _set_inactive(self, ids: str | Iterable[str], inactive: bool) -> int:
        wanted = [ids] if isinstance(ids, str) else list(dict.fromkeys(ids))
        with write_transaction(self._engine) as conn:
            # the version first, as compare_and_set: on PostgreSQL its row lock keeps any other
            # write from committing between this read and the write (it would be overwritten)
            seq = self._bump_version(conn)
            rows = conn.execute(select(_E.c.id, _E.c.data).where(_E.c.id.in_(wanted))).all()
            missing = sorted(set(wanted) - {row.id for row in rows})
            if missing:
                raise KnowledgeNotFoundError(missing)
            changed = []
            for row in rows:
                entry = entry_from_data(row.data)
                entry.inactive_mark = inactive
                changed.append(entry)
            for chunk in _chunks(changed, DEFAULT_BATCH):
                self._write_batch(conn, chunk, seq)
        return seq

    def purge(self, ids: Iterable[str] | None = None) -> int:
        """Delete inactive entries for good (all, or those of ``ids``); return how many."""
        condition = _E.c.inactive.is_(True)
        with write_transaction(self._engine) as conn:
            victims = select(_E.c.id).where(condition)
            if ids is not None:
                victims = victims.where(_E.c.id.in_(list(ids)))
            doomed = [row.id for row in conn.execute(victims)]
            if not doomed:
                return 0
            self._bump_version(conn)
            for chunk in _chunks(doomed, DEFAULT_BATCH):
                for table in schema.FACET_TABLES:
                    conn.execute(delete(table).where(table.c.ukf_id.in_(chunk)))
                conn.execute(delete(_E).where(_E.c.id.in_(chunk)))
        log.info("purged %d inactive entries", len(doomed))
        self.planner.note_writes(len(doomed))
        return len(doomed)

    # ------------------------------------------------------------------------ JSONL
    def export_jsonl(
        self,
        target: JSONLTarget,
        filter: UKFFilter | None = None,
        *,
        reader: Reader | None = None,
        **criteria: Any,
    ) -> int:
        """Write entries as canonical JSON Lines in id order; return how many.

        The stored documents are canonical JSON already, so they are written as they are.
        Exports inactive entries too unless ``active=True`` is given.
        """
        criteria.setdefault("active", None)
        flt = UKFFilter.build(filter, **criteria)
        return write_jsonl_lines(self._iterate_documents(flt, reader), target)

    def _iterate_documents(
        self, flt: UKFFilter, reader: Reader | None, batch_size: int = DEFAULT_BATCH
    ) -> Iterator[str]:
        """Stored JSON documents in id order, read in keyset pages of ``batch_size``."""
        last: str | None = None
        while True:
            query = select(_E.c.id, _E.c.data).where(*self._where(flt, reader))
            if last is not None:
                query = query.where(_E.c.id > last)
            with read_transaction(self._engine) as conn:
                rows = conn.execute(query.order_by(_E.c.id).limit(batch_size)).all()
            yield from (row.data for row in rows)
            if len(rows) < batch_size:
                return
            last = rows[-1].id

    def import_jsonl(self, source: JSONLSource) -> int:
        """Validate every line, then upsert them all in one transaction; return how many.

        A broken line raises :class:`JSONLImportError` naming the line and field, and nothing
        is written.
        """
        entries = read_jsonl(source)
        self.upsert_many(entries)
        return len(entries)
