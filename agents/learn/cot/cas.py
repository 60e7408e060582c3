"""Compare-and-set of knowledge entries: write an entry only where it is still what was read.

A writer that reads an entry, changes one field and writes the whole entry back loses what
another writer changed in between (feedback counting a verdict on the same experience, say).
:func:`compare_and_set` closes that window: in one store write transaction it reads the
entries again and writes each new version only where the stored entry still equals the one
the caller read; the others are returned as conflicts, for the caller to read afresh and
decide again.

The transaction bumps the store version before it reads, as every store write does first:
on PostgreSQL that takes the version row's lock, so no other store write commits between
the comparison and the write (and the read, a new statement under READ COMMITTED, sees every
write committed before); on SQLite the write transaction (``BEGIN IMMEDIATE``) holds the
database's write lock throughout. :class:`kb.store.KnowledgeStore` has no such method (yet);
this uses its transaction and batch writer as its own writes do.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import select

from kb import schema
from kb.engine import write_transaction
from kb.rows import entry_from_data
from kb.store import KnowledgeStore
from ukf import BaseUKF

_E = schema.entries


def compare_and_set(
    store: KnowledgeStore, pairs: Mapping[str, tuple[BaseUKF, BaseUKF]]
) -> tuple[list[str], list[str]]:
    """Write ``new`` for each ``id: (read, new)`` of ``pairs`` whose stored entry still equals
    ``read`` (the same document), all in one transaction; return (ids written, ids whose
    entry changed or went since it was read: nothing written for them)."""
    if not pairs:
        return [], []
    for uid, (read, new) in pairs.items():
        if read.id != uid or new.id != uid:
            raise ValueError(f"compare_and_set: {uid!r} is paired with {read.id!r}, {new.id!r}")
    written: list[BaseUKF] = []
    conflicts: list[str] = []
    with write_transaction(store._engine) as conn:
        seq = store._bump_version(conn)  # first, as every store write: see the docstring
        query = select(_E.c.id, _E.c.data).where(_E.c.id.in_(list(pairs)))
        stored = {row.id: row.data for row in conn.execute(query)}
        for uid, (read, new) in pairs.items():
            data = stored.get(uid)
            if data is None or entry_from_data(data).to_dict() != read.to_dict():
                conflicts.append(uid)
            else:
                written.append(new)
        if written:
            store._write_batch(conn, written, seq)
    if written:
        store.planner.note_writes(len(written))
    return [e.id for e in written], conflicts
