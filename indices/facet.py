"""Faceted search over the store's normalised facet tables.

A thin index: the store already keeps tags as ``(slot, value)`` rows, so a facet query is one
SQL query (see :class:`kb.filters.UKFFilter`): ``slot=value``, several values per slot (OR),
``*`` wildcards (SQL LIKE), combined with type, collection, owner and workspace filters and
the reader's visibility, highest priority first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from indices.hits import Hit
from kb.filters import UKFFilter, normalize_tag_filter
from kb.store import KnowledgeStore
from kb.visibility import Reader


class FacetIndex:
    """``search(tags={...}, type=..., ...) -> [Hit]`` over a :class:`KnowledgeStore`."""

    def __init__(self, store: KnowledgeStore) -> None:
        self.store = store

    def search(
        self,
        tags: Sequence[str] | Mapping[str, Any] | None = None,
        *,
        reader: Reader | None = None,
        limit: int = 100,
        **criteria: Any,
    ) -> list[Hit]:
        """Entries whose tags match ``tags`` and ``criteria`` (UKFFilter fields), by priority.

        The score is the rank-discounted priority order: 1.0 for the first hit, decreasing.
        """
        flt = UKFFilter.build(tags=tags, **criteria)
        label = ", ".join(
            f"{slot}={'|'.join(values)}" for slot, values in normalize_tag_filter(tags).items()
        )
        ids = self.store.search_ids(flt, reader=reader, limit=limit)
        return [
            Hit(uid, 1.0 / (rank + 1), "facet", phrase=label or None, detail=dict(criteria))
            for rank, uid in enumerate(ids)
        ]
