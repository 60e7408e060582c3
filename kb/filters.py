"""Backend-neutral filters over the store, compiled to SQLAlchemy conditions.

``UKFFilter`` fields combine with AND. ``type``, ``collection``, ``workspace``, ``owner``,
``source`` and ``id`` take one value or a list (OR). ``tags`` takes ``"[SLOT:value]"`` strings
or a ``{slot: value | [values]}`` mapping: slots combine with AND, values of one slot with OR,
and a value containing ``*`` is a wildcard pattern (``[TABLE:income_*]``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from sqlalchemy import ColumnElement, Table, and_, or_, select, true

from kb import schema
from ukf import parse_tag

OneOrMany = str | Sequence[str] | None


def _many(value: OneOrMany) -> list[str] | None:
    if value is None:
        return None
    return [value] if isinstance(value, str) else list(value)


def _like_pattern(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped.replace("*", "%")


def normalize_tag_filter(tags: Sequence[str] | Mapping[str, Any] | None) -> dict[str, list[str]]:
    """Group tag criteria by slot.

    ``["[A:x]", "[A:y]", "[B:z]"]`` and ``{"a": ["x", "y"], "B": "z"}`` both give
    ``{"A": ["x", "y"], "B": ["z"]}``.
    """
    grouped: dict[str, list[str]] = {}
    if not tags:
        return grouped
    if isinstance(tags, Mapping):
        for slot, values in tags.items():
            parsed = [parse_tag(f"[{slot}:{value}]") for value in _many(values) or []]
            for tag in parsed:
                grouped.setdefault(tag.slot, []).append(tag.value)
        return grouped
    for tag in map(parse_tag, [tags] if isinstance(tags, str) else tags):
        grouped.setdefault(tag.slot, []).append(tag.value)
    return grouped


@dataclass(frozen=True)
class UKFFilter:
    """Criteria for :meth:`KnowledgeStore.iterate`, ``search`` and ``count``."""

    id: OneOrMany = None
    type: OneOrMany = None
    collection: OneOrMany = None
    workspace: OneOrMany = None
    owner: OneOrMany = None
    source: OneOrMany = None
    name: str | None = None
    tags: Sequence[str] | Mapping[str, Any] | None = None
    synonym: str | None = None
    synonym_prefix: str | None = None
    related_to: str | None = None
    logical_key: OneOrMany = None
    authoritative: bool | None = None
    active: bool | None = True
    min_priority: int | None = None

    @classmethod
    def build(cls, filter: UKFFilter | None = None, **criteria: Any) -> UKFFilter:
        """Merge keyword criteria into ``filter``; unknown keywords raise ``TypeError``."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(criteria) - known)
        if unknown:
            raise TypeError(f"unknown filter field(s) {unknown}; known: {sorted(known)}")
        base = {f.name: getattr(filter, f.name) for f in fields(cls)} if filter else {}
        return cls(**{**base, **criteria})

    def clause(self, table: Table) -> ColumnElement[bool]:
        """Compile to a condition on ``table`` (``ukf_entries`` or an alias of it)."""
        c = table.c
        parts: list[ColumnElement[bool]] = []
        for column, value in (
            (c.id, self.id),
            (c.type, self.type),
            (c.collection, self.collection),
            (c.workspace, self.workspace),
            (c.owner, self.owner),
            (c.source, self.source),
            (c.logical_key, self.logical_key),
        ):
            values = _many(value)
            if values is not None:
                parts.append(column.in_(values))
        if self.name is not None:
            parts.append(c.name == self.name)
        if self.authoritative is not None:
            parts.append(c.authoritative.is_(self.authoritative))
        if self.active is not None:
            parts.append(c.inactive.is_(not self.active))
        if self.min_priority is not None:
            parts.append(c.priority >= self.min_priority)
        for slot, values in normalize_tag_filter(self.tags).items():
            parts.append(_tag_clause(table, slot, values, _many(self.type)))
        s, r = schema.synonyms, schema.related
        if self.synonym is not None:
            parts.append(c.id.in_(select(s.c.ukf_id).where(s.c.norm == self.synonym.casefold())))
        if self.synonym_prefix:
            parts.append(_prefix_clause(table, self.synonym_prefix.casefold()))
        if self.related_to is not None:
            parts.append(c.id.in_(select(r.c.ukf_id).where(r.c.object == self.related_to)))
        return and_(true(), *parts)


def _tag_clause(
    table: Table, slot: str, values: list[str], types: list[str] | None
) -> ColumnElement[bool]:
    """Entries tagged ``slot`` = one of ``values`` (``*`` wildcards); with ``types``, the
    tag rows are narrowed by their copied entry type in the index (not entry by entry)."""
    t = schema.tags
    exact = [v for v in values if "*" not in v]
    options: list[ColumnElement[bool]] = [t.c.value.in_(exact)] if exact else []
    options += [t.c.value.like(_like_pattern(v), escape="\\") for v in values if "*" in v]
    conditions = [t.c.slot == slot, or_(*options)]
    if types is not None:
        conditions.append(t.c.entry_type.in_(types))
    return table.c.id.in_(select(t.c.ukf_id).where(*conditions))


def _prefix_clause(table: Table, prefix: str) -> ColumnElement[bool]:
    s = schema.synonyms
    upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    return table.c.id.in_(select(s.c.ukf_id).where(s.c.norm >= prefix, s.c.norm < upper))
