"""Tables of the knowledge store (current schema; see :mod:`kb.migrations`).

``ukf_entries`` holds one row per entry: the canonical JSON document (``data``) plus the
columns that filters and visibility need. Facets are normalised into ``ukf_tags`` (slot, value),
``ukf_synonyms`` (with a case-folded ``norm`` for prefix search), ``ukf_related`` and
``ukf_auths``. ``store_meta`` holds the monotonic write ``version``.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    SmallInteger,
    String,
    Table,
    Text,
)

metadata = MetaData()

# Byte-wise ordering on PostgreSQL so prefix ranges and LIKE 'x%' use the index.
SortableText = String(512).with_variant(String(512, collation="C"), "postgresql")
_CASCADE = {"ondelete": "CASCADE"}

entries = Table(
    "ukf_entries",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("type", String(64), nullable=False),
    Column("name", Text, nullable=False),
    Column("version", String(64), nullable=False),
    Column("variant", String(128), nullable=False),
    Column("source", String(16), nullable=False),
    Column("owner", String(256)),
    Column("workspace", String(256)),
    Column("creator", String(256)),
    Column("collection", String(128), nullable=False),
    Column("priority", Integer, nullable=False),
    Column("inactive", Boolean, nullable=False),
    Column("authoritative", Boolean, nullable=False),
    Column("has_auths", Boolean, nullable=False),
    Column("layer", SmallInteger, nullable=False),
    Column("logical_key", String(32), nullable=False),
    Column("content_hash", String(32), nullable=False),
    Column("timestamp", DateTime(timezone=True), nullable=False),
    Column("expiration", DateTime(timezone=True)),
    Column("seq", BigInteger, nullable=False),
    Column("data", Text, nullable=False),
    Index("ix_ukf_entries_type", "type"),
    Index("ix_ukf_entries_logical_key", "logical_key"),
    Index("ix_ukf_entries_priority", "priority", "id"),
    Index("ix_ukf_entries_seq", "seq"),
)

tags = Table(
    "ukf_tags",
    metadata,
    Column("ukf_id", String(32), ForeignKey("ukf_entries.id", **_CASCADE), primary_key=True),
    Column("slot", String(64), primary_key=True),
    Column("value", SortableText, primary_key=True),
    Index("ix_ukf_tags_slot_value", "slot", "value"),
)

synonyms = Table(
    "ukf_synonyms",
    metadata,
    Column("ukf_id", String(32), ForeignKey("ukf_entries.id", **_CASCADE), primary_key=True),
    Column("position", Integer, primary_key=True),
    Column("synonym", Text, nullable=False),
    Column("norm", SortableText, nullable=False),
    Index("ix_ukf_synonyms_norm", "norm"),
)

related = Table(
    "ukf_related",
    metadata,
    Column("ukf_id", String(32), ForeignKey("ukf_entries.id", **_CASCADE), primary_key=True),
    Column("position", Integer, primary_key=True),
    Column("subject", String(256), nullable=False),
    Column("relation", String(128), nullable=False),
    Column("object", String(256), nullable=False),
    Column("relation_id", String(256)),
    Index("ix_ukf_related_object", "object"),
)

auths = Table(
    "ukf_auths",
    metadata,
    Column("ukf_id", String(32), ForeignKey("ukf_entries.id", **_CASCADE), primary_key=True),
    Column("principal", String(256), primary_key=True),
    Column("authority", String(16), primary_key=True),
    Index("ix_ukf_auths_principal", "principal"),
)

store_meta = Table(
    "store_meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", BigInteger, nullable=False),
)

schema_migrations = Table(
    "schema_migrations",
    metadata,
    Column("version", Integer, primary_key=True),
    Column("description", Text, nullable=False),
    Column("applied_at", DateTime(timezone=True), nullable=False),
)

FACET_TABLES = (tags, synonyms, related, auths)
