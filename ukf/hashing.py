"""Stable hashes for UKF entries.

Both hashes are the first 32 hex digits (128 bits) of a SHA-256 over *canonical JSON*: keys
sorted, no insignificant whitespace, UTF-8 text kept as is, and values converted the way
pydantic's JSON mode converts them (datetimes as ISO 8601 strings, tuples as lists).

- ``id`` hashes the identity fields, listed in :data:`IDENTITY_FIELDS`, with tags already
  normalised and sorted. It is the same in every process and on every machine; changing an
  identity field means a new entry (``derive()``).
- ``content_hash`` hashes ``{"content": ..., "content_resources": ...}``. It changes whenever
  the payload changes, while the id stays.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic_core import to_jsonable_python

IDENTITY_FIELDS: tuple[str, ...] = (
    "type",
    "name",
    "version",
    "variant",
    "source",
    "creator",
    "owner",
    "workspace",
    "collection",
    "tags",
    "timefluid",
)
HASH_LENGTH = 32


def canonical_json(value: Any) -> str:
    """Serialise ``value`` deterministically (sorted keys, compact, UTF-8 kept)."""
    return json.dumps(
        to_jsonable_python(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )


def stable_hash(value: Any) -> str:
    """First 32 hex digits of SHA-256 over the canonical JSON of ``value``."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()[:HASH_LENGTH]
