"""The one retrieval result type: a :class:`Hit` says which entry matched, how well and why."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Reason = Literal["span", "facet", "vector", "neighbour", "relation"]


@dataclass(frozen=True)
class Hit:
    """A UKF id found by an index.

    Attributes:
        ukf_id: The entry.
        score: Higher is better; comparable within one index.
        reason: Why it matched: a text ``span``, a ``facet`` filter, ``vector`` similarity, a
            graph ``neighbour`` or a ``relation``.
        span: ``(start, end)`` character offsets in the question, for span matches.
        phrase: The text that matched (the pattern, the facet, the serializer, the relation).
        detail: Anything else worth showing (serializer, hop count, relation path, ...).
    """

    ukf_id: str
    score: float
    reason: Reason
    span: tuple[int, int] | None = None
    phrase: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
