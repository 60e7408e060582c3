"""Tables of the knowledge store (current schema; see :mod:`kb.migrations`).

``ukf_entries`` holds one row per entry: the canonical JSON document (``data``) plus the
columns that filters and visibility need. Facets are normalised into ``ukf_tags`` (slot, value),
``ukf_synonyms`` (with a case-folded ``norm`` for prefix search), ``ukf_related`` and
``ukf_auths``. ``store_meta`` holds the monotonic write ``version``.

The server keeps its own tables in the same database (migration 2): ``api_keys`` (hashed
secrets, roles and expiry times: migration 4), ``jobs`` and ``job_logs`` (the job queue the
worker claims from), and ``audit_log`` with ``audit_log_entries`` (who wrote which knowledge,
and when).
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
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


def _cascading(target: str) -> ForeignKey:
    """A foreign key to ``target`` (``table.column``) whose rows go when the target's go."""
    return ForeignKey(target, ondelete="CASCADE")


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
    Column("ukf_id", String(32), _cascading("ukf_entries.id"), primary_key=True),
    Column("slot", String(64), primary_key=True),
    Column("value", SortableText, primary_key=True),
    # the entry's type, copied here so "tables tagged [DATABASE:x]" is one index range even
    # when thousands of logged experiences carry the same tag (migration 3)
    Column("entry_type", String(32)),
    Index("ix_ukf_tags_slot_value_type", "slot", "value", "entry_type"),
)

synonyms = Table(
    "ukf_synonyms",
    metadata,
    Column("ukf_id", String(32), _cascading("ukf_entries.id"), primary_key=True),
    Column("position", Integer, primary_key=True),
    Column("synonym", Text, nullable=False),
    Column("norm", SortableText, nullable=False),
    Index("ix_ukf_synonyms_norm", "norm"),
)

related = Table(
    "ukf_related",
    metadata,
    Column("ukf_id", String(32), _cascading("ukf_entries.id"), primary_key=True),
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
    Column("ukf_id", String(32), _cascading("ukf_entries.id"), primary_key=True),
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

# ---------------------------------------------------------------- server tables (migration 2)
# An auto-incrementing 64-bit key (SQLite only auto-increments INTEGER PRIMARY KEY).
SerialKey = BigInteger().with_variant(Integer, "sqlite")

api_keys = Table(
    "api_keys",
    metadata,
    Column("id", String(32), primary_key=True),  # the public part of the key, for lookup
    Column("salt", String(32), nullable=False),
    Column("secret_hash", String(64), nullable=False),  # HMAC-SHA256(pepper, salt + secret)
    Column("role", String(16), nullable=False),
    Column("user_name", String(256), nullable=False),
    Column("workspace", String(256)),
    Column("groups", Text, nullable=False),  # JSON list
    Column("label", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("created_by", String(32)),
    Column("last_used_at", DateTime(timezone=True)),
    Column("revoked_at", DateTime(timezone=True)),
    Column("expires_at", DateTime(timezone=True)),  # None: never (migration 4)
)

jobs = Table(
    "jobs",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("kind", String(32), nullable=False),
    Column("state", String(16), nullable=False),  # queued|running|succeeded|failed|cancelled
    Column("params", Text, nullable=False),  # JSON
    Column("submitter", Text, nullable=False),  # JSON: key id, user, workspace, groups, role
    Column("progress", Float, nullable=False),
    Column("message", Text, nullable=False),
    Column("result", Text),  # JSON
    Column("error", Text),
    Column("attempts", Integer, nullable=False),
    Column("max_attempts", Integer, nullable=False),
    Column("cancel_requested", Boolean, nullable=False),
    Column("worker_id", String(128)),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("started_at", DateTime(timezone=True)),
    Column("finished_at", DateTime(timezone=True)),
    Column("heartbeat_at", DateTime(timezone=True)),
    Index("ix_jobs_state_created", "state", "created_at"),
)

job_logs = Table(
    "job_logs",
    metadata,
    Column("id", SerialKey, primary_key=True, autoincrement=True),
    Column("job_id", String(32), _cascading("jobs.id"), nullable=False),
    Column("at", DateTime(timezone=True), nullable=False),
    Column("level", String(16), nullable=False),
    Column("line", Text, nullable=False),
    Index("ix_job_logs_job", "job_id", "id"),
)

audit_log = Table(
    "audit_log",
    metadata,
    Column("id", SerialKey, primary_key=True, autoincrement=True),
    Column("at", DateTime(timezone=True), nullable=False),
    Column("action", String(32), nullable=False),  # create|update|delete|import|profile|...
    Column("key_id", String(32)),
    Column("user_name", String(256)),
    Column("job_id", String(32)),
    Column("entry_count", Integer, nullable=False),
    Column("store_version", BigInteger),
    Column("detail", Text, nullable=False),  # JSON
    Index("ix_audit_log_at", "at"),
)

audit_log_entries = Table(
    "audit_log_entries",
    metadata,
    Column("audit_id", BigInteger, _cascading("audit_log.id"), primary_key=True),
    Column("ukf_id", String(32), primary_key=True),
    Index("ix_audit_log_entries_ukf", "ukf_id"),
)

SERVER_TABLES = (api_keys, jobs, job_logs, audit_log, audit_log_entries)
