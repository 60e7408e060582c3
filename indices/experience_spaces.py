"""The faiss spaces the experience index searches, one per scope, and which rows are whose.

Two scopes: ``labeled`` (experiences with SQL that was verified or given) and ``all`` (every
logged question too). Rows carry their experience's databases, so a search within one database
goes deep enough to find ``k`` of its experiences among everybody's (see
:meth:`ExperienceSpaces.nearest`). The vectors come in already mapped by the index's metric;
a refit resets the spaces and inserts everything again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import faiss
import numpy as np

from indices import faiss_threads

SCOPES = ("labeled", "all")
_ANY_DATABASE = ""  # the count key of experiences without a database tag


@dataclass(frozen=True)
class _Row:
    row: int
    databases: tuple[str, ...]
    labeled: bool

    def count_keys(self) -> tuple[str, ...]:
        return self.databases or (_ANY_DATABASE,)


class ExperienceSpaces:
    """Cosine spaces of ``width`` dimensions (vectors normalised by the caller)."""

    def __init__(self, width: int, *, threads: int | None = 1) -> None:
        self.threads = threads
        self._next_row = 0
        self.reset(width)

    def reset(self, width: int) -> None:
        """Empty spaces of a new width (the metric changed)."""
        self._spaces = {scope: faiss.IndexIDMap2(faiss.IndexFlatIP(width)) for scope in SCOPES}
        self._rows: dict[str, _Row] = {}
        self._ids: dict[int, str] = {}
        self._per_database: dict[str, Counter[str]] = {scope: Counter() for scope in SCOPES}

    def add(
        self,
        ukf_ids: Sequence[str],
        mapped: np.ndarray,
        databases: Sequence[tuple[str, ...]],
        labeled: Sequence[bool],
    ) -> None:
        """Insert experiences (ids not present yet) with their mapped vectors."""
        if not ukf_ids:
            return
        rows = np.arange(self._next_row, self._next_row + len(ukf_ids), dtype=np.int64)
        self._next_row += len(ukf_ids)
        self._spaces["all"].add_with_ids(mapped, rows)
        picked = [i for i, flag in enumerate(labeled) if flag]
        if picked:
            self._spaces["labeled"].add_with_ids(mapped[picked], rows[picked])
        for row, uid, dbs, flag in zip(rows.tolist(), ukf_ids, databases, labeled, strict=True):
            entry = _Row(row, tuple(dbs), bool(flag))
            self._rows[uid], self._ids[row] = entry, uid
            self._count(entry, 1)

    def remove(self, ukf_ids: Sequence[str]) -> None:
        """Drop experiences (unknown ids are ignored)."""
        gone = []
        for uid in ukf_ids:
            entry = self._rows.pop(uid, None)
            if entry is not None:
                del self._ids[entry.row]
                self._count(entry, -1)
                gone.append(entry.row)
        if gone:
            for space in self._spaces.values():
                # faiss's wrapper takes an id array; its stub names only IDSelector
                space.remove_ids(np.array(gone, dtype=np.int64))  # type: ignore[arg-type]

    def _count(self, entry: _Row, step: int) -> None:
        for database in entry.count_keys():
            self._per_database["all"][database] += step
            if entry.labeled:
                self._per_database["labeled"][database] += step

    def nearest(
        self, scope: str, mapped: np.ndarray, k: int, database: str | None
    ) -> list[tuple[str, float]]:
        """The ``k`` nearest experiences of ``scope`` within ``database`` (None: any), best
        first, as (ukf id, cosine)."""
        space = self._spaces[scope]
        total, in_scope = space.ntotal, self._scope_size(scope, database)
        if not in_scope:
            return []
        # deep enough that k of the database's experiences are likely among the rows found
        depth = min(total, k if database is None else 2 * k * total // in_scope + 50)
        while True:
            scores, rows = faiss_threads.search(space, mapped, depth, self.threads)
            found = [
                (self._ids[r], float(s))
                for s, r in zip(scores[0], rows[0], strict=True)
                if r >= 0 and r in self._ids
            ]
            kept = [(uid, s) for uid, s in found if self._in_scope(uid, database)]
            if len(kept) >= k or depth >= total:
                return kept[:k]
            depth = min(total, depth * 4)

    def _scope_size(self, scope: str, database: str | None) -> int:
        """How many experiences of ``scope`` a search in ``database`` may return."""
        counts = self._per_database[scope]
        if database is None:
            return sum(counts.values())
        return counts[database] + counts[_ANY_DATABASE]

    def _in_scope(self, ukf_id: str, database: str | None) -> bool:
        databases = self._rows[ukf_id].databases
        return database is None or not databases or database in databases
