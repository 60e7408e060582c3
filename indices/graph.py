"""The knowledge graph: UKF entries as nodes, ``related`` tuples as typed edges (networkx).

Structural relations come from the templates (``column_of``, ``value_of``, ``joins``,
``uses_column``, ``uses_enum``, ``has_level``, ``synonym_of``) and any other ``related`` tuple
an entry carries. Expansion walks a few hops from seed entries, optionally only along given
relation types; ``join_path`` finds the shortest foreign-key path between two tables.

Each edge belongs to the entry that declared it (its *owner*), whatever its subject: a mined
join entry declares ``table a --joins--> table b``. Replacing or removing the owner replaces
or removes its edges, so a deactivated join no longer connects its tables; the same relation
declared by two entries is two edges, and removing one owner leaves the other's.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

import networkx as nx

from indices.hits import Hit
from indices.sync import refresh_entries

if TYPE_CHECKING:
    from kb.store import KnowledgeStore
    from ukf import BaseUKF

JOIN = "joins"
Direction = Literal["out", "in", "both"]


class GraphIndex:
    """A multigraph of entries; edges keyed by (relation, owner)."""

    def __init__(self) -> None:
        self._graph: nx.MultiDiGraph[str] = nx.MultiDiGraph()
        self._owned: dict[str, list[tuple[str, str, tuple[str, str]]]] = {}
        self._lock = threading.RLock()
        self.version = 0

    # ------------------------------------------------------------------ writing
    def add(self, entries: Iterable[BaseUKF]) -> None:
        """Add or replace entries (their node attributes and outgoing edges)."""
        with self._lock:
            for entry in entries:
                self._drop_owned(entry.id)
                self._graph.add_node(entry.id, type=entry.type, name=entry.name)
                owned = self._owned.setdefault(entry.id, [])
                for rel in entry.related:
                    key = (rel.relation, entry.id)
                    self._graph.add_edge(
                        rel.subject,
                        rel.object,
                        key=key,
                        relation=rel.relation,
                        resources=rel.resources,
                    )
                    owned.append((rel.subject, rel.object, key))

    def remove(self, ukf_ids: Iterable[str]) -> None:
        """Remove entries: their nodes, the edges touching them and the edges they own."""
        with self._lock:
            for uid in ukf_ids:
                self._drop_owned(uid)
                self._owned.pop(uid, None)
                if uid in self._graph:
                    self._graph.remove_node(uid)

    def _drop_owned(self, uid: str) -> None:
        for u, v, key in self._owned.get(uid, []):
            if self._graph.has_edge(u, v, key):
                self._graph.remove_edge(u, v, key)
        self._owned[uid] = []

    @classmethod
    def from_store(cls, store: KnowledgeStore) -> GraphIndex:
        index = cls()
        index.version = store.version
        index.add(store.iterate())
        return index

    def refresh(self, store: KnowledgeStore) -> bool:
        """Apply the store's writes since :attr:`version`; True when something changed."""
        return refresh_entries(self, store)

    # ------------------------------------------------------------------ reading
    def __contains__(self, uid: str) -> bool:
        return uid in self._graph

    def node(self, uid: str) -> dict[str, Any]:
        return dict(self._graph.nodes[uid])

    def neighbours(
        self, uid: str, relations: Iterable[str] | None = None, direction: Direction = "both"
    ) -> list[tuple[str, str, str]]:
        """``(neighbour, relation, direction)`` for edges touching ``uid`` (``out``/``in``)."""
        wanted = set(relations) if relations is not None else None
        found: list[tuple[str, str, str]] = []
        with self._lock:
            if uid not in self._graph:
                return []
            if direction in ("out", "both"):
                out_edges = self._graph.out_edges(uid, data=True)
                found += [(v, str(data["relation"]), "out") for _, v, data in out_edges]
            if direction in ("in", "both"):
                in_edges = self._graph.in_edges(uid, data=True)
                found += [(u, str(data["relation"]), "in") for u, _, data in in_edges]
        unique = dict.fromkeys(found)  # one relation declared by several entries
        return [item for item in unique if wanted is None or item[1] in wanted]

    def expand(
        self,
        seeds: Iterable[str],
        *,
        hops: int = 2,
        relations: Iterable[str] | None = None,
        types: Iterable[str] | None = None,
        direction: Direction = "both",
    ) -> list[Hit]:
        """Entries within ``hops`` of the seeds (seeds excluded), nearest first.

        Args:
            seeds: Starting entry ids.
            hops: Maximum path length.
            relations: Only follow these relation types.
            types: Only return entries of these UKF types (walks through any type).
            direction: Follow edges ``out`` of a node (subject → object: an enum to its
                column), ``in`` (a table to its columns) or ``both``.
        """
        keep = set(types) if types is not None else None
        frontier = [s for s in dict.fromkeys(seeds) if s in self._graph]
        seen = {s: (0, s, "") for s in frontier}
        for depth in range(1, hops + 1):
            nxt = []
            for node in frontier:
                for neighbour, relation, way in self.neighbours(node, relations, direction):
                    if neighbour not in seen:
                        seen[neighbour] = (depth, node, f"{relation}:{way}")
                        nxt.append(neighbour)
            frontier = nxt
        hits = []
        for uid, (depth, via, relation) in seen.items():
            if depth == 0 or (keep is not None and self._graph.nodes[uid].get("type") not in keep):
                continue
            hits.append(
                Hit(
                    uid,
                    1.0 / (depth + 1),
                    "neighbour",
                    phrase=relation,
                    detail={"hops": depth, "via": via},
                )
            )
        return sorted(hits, key=lambda h: (-h.score, h.ukf_id))

    def join_path(self, source: str, target: str) -> list[dict[str, Any]]:
        """Shortest foreign-key path between two table entries, as join steps.

        Each step is ``{"from": table_id, "to": table_id, "columns": [...],
        "ref_columns": [...]}`` in the direction of the foreign key. Empty when the tables
        are not connected (or the same).
        """
        with self._lock:
            joins: nx.Graph[str] = nx.Graph()
            for u, v, data in self._graph.edges(data=True):
                if data["relation"] == JOIN:
                    joins.add_edge(u, v, fk={"from": u, "to": v, **data["resources"]})
            if source not in joins or target not in joins or source == target:
                return []
            try:
                nodes = nx.shortest_path(joins, source, target)
            except nx.NetworkXNoPath:
                return []
            return [joins.edges[a, b]["fk"] for a, b in itertools.pairwise(nodes)]
