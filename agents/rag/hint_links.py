"""Which question-word links become hints: the precise ones, not every string match.

The string index links every phrase it knows; a small model reads each link as an order. Two
kinds of links mislead it into joins the question does not need:

- a link inside a longer linked phrase: "TV Channels" names table TV_Channel, so the inner
  "Channels" -> TV_series.Channel is noise;
- an ambiguous phrase ("names" -> museum.Name and visitor.Name) when the question anchors
  one of those tables elsewhere ("visitors" -> table visitor): keep the anchored reading.

``precise_links(items)`` returns the link items worth showing, in their original order.
"""

from __future__ import annotations

from indices.evidence import EvidenceItem

LINK_TYPES = ("table", "column", "enum")


def precise_links(items: list[EvidenceItem]) -> list[EvidenceItem]:
    """The link items (tables, columns, values with spans) left after pruning."""
    links = [i for i in items if i.entry.type in LINK_TYPES and i.spans]
    links = [i for i in links if not _inside_a_longer_link(i, links)]
    by_phrase: dict[tuple[tuple[int, int], ...], list[EvidenceItem]] = {}
    for item in links:
        by_phrase.setdefault(tuple(item.spans), []).append(item)
    keep: set[int] = set()
    for spans, group in by_phrase.items():
        tables = {_table(i) for i in group}
        # tables the question names through another phrase
        elsewhere = {_table(i) for i in links if tuple(i.spans) != spans}
        preferred = [i for i in group if _table(i) in elsewhere]
        chosen = preferred if len(tables) > 1 and preferred else group
        keep.update(id(i) for i in chosen)
    return [i for i in links if id(i) in keep]


def _table(item: EvidenceItem) -> str:
    return str(item.entry.content_resources.get("table") or item.entry.name)


def _inside_a_longer_link(item: EvidenceItem, links: list[EvidenceItem]) -> bool:
    """Every span of ``item`` lies strictly inside a longer span of a link to another table."""
    mine = _table(item)
    for a, b in item.spans:
        covered = any(
            c <= a and b <= d and (d - c) > (b - a) and _table(other) != mine
            for other in links
            for c, d in other.spans
        )
        if not covered:
            return False
    return True
