"""Conversion between UKF entries and rows of the store's tables."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pydantic_core

from kb.visibility import layer_of, logical_key
from ukf import BaseUKF, canonical_json, parse_tag, type_for


@dataclass
class RowBatch:
    """Rows for a batch of entries, ready for ``executemany``."""

    ids: list[str] = field(default_factory=list)
    entries: list[dict[str, Any]] = field(default_factory=list)
    tags: list[dict[str, Any]] = field(default_factory=list)
    synonyms: list[dict[str, Any]] = field(default_factory=list)
    related: list[dict[str, Any]] = field(default_factory=list)
    auths: list[dict[str, Any]] = field(default_factory=list)

    def add(self, entry: BaseUKF, seq: int) -> None:
        uid = entry.id
        self.ids.append(uid)
        self.entries.append(entry_row(entry, seq))
        self.tags += [
            {"ukf_id": uid, "slot": tag.slot, "value": tag.value, "entry_type": entry.type}
            for tag in map(parse_tag, entry.tags)
        ]
        self.synonyms += [
            {"ukf_id": uid, "position": i, "synonym": s, "norm": s.casefold()}
            for i, s in enumerate(entry.synonyms)
        ]
        self.related += [
            {
                "ukf_id": uid,
                "position": i,
                "subject": r.subject,
                "relation": r.relation,
                "object": r.object,
                "relation_id": r.relation_id,
            }
            for i, r in enumerate(entry.related)
        ]
        self.auths += [
            {"ukf_id": uid, "principal": a.user, "authority": a.authority}
            for a in {(a.user, a.authority): a for a in entry.auths}.values()
        ]


def entry_row(entry: BaseUKF, seq: int) -> dict[str, Any]:
    document = entry.to_dict()
    return {
        "id": document["id"],
        "type": entry.type,
        "name": entry.name,
        "version": entry.version,
        "variant": entry.variant,
        "source": entry.source,
        "owner": entry.owner,
        "workspace": entry.workspace,
        "creator": entry.creator,
        "collection": entry.collection,
        "priority": entry.priority,
        "inactive": entry.inactive_mark,
        "authoritative": entry.is_authoritative,
        "has_auths": bool(entry.auths),
        "layer": layer_of(entry),
        "logical_key": logical_key(entry),
        "content_hash": document["content_hash"],
        "timestamp": entry.timestamp,
        "expiration": entry.expiration,
        "seq": seq,
        "data": canonical_json(document),
    }


def document_from_data(data: str) -> dict[str, Any]:
    """An entry's stored JSON document, parsed but not validated (it was when written)."""
    return pydantic_core.from_json(data)


def entry_from_data(data: str) -> BaseUKF:
    """Rebuild an entry from its stored JSON (verified when it was written)."""
    payload = json.loads(data)
    return type_for(payload.get("type")).model_validate(payload)
