"""Versioned schema migrations of the knowledge store.

Each migration is a function of a connection inside the migration transaction; they are
applied in order and recorded in ``schema_migrations``. Opening a store migrates it; two
processes opening a fresh store at once are serialised (SQLite ``BEGIN IMMEDIATE``,
PostgreSQL advisory lock). A store written by a newer schema is refused rather than guessed at.

Migration 1 creates the knowledge tables and migration 2 the server's (API keys, jobs, audit
log) as :mod:`kb.schema` declares them now, so a later migration that changes a table must
be idempotent: it finds the change already made on a store created at the latest version,
and makes it on an older one (migration 3 adds ``ukf_tags.entry_type``, migration 4
``api_keys.expires_at``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Connection, func, insert, inspect, select, text

from kb import schema
from kb.errors import SchemaVersionError

log = logging.getLogger(__name__)
_PG_LOCK_KEY = 0x414C4D41  # "ALMA"


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    apply: Callable[[Connection], None]


def _initial_schema(conn: Connection) -> None:
    tables = [schema.entries, *schema.FACET_TABLES]
    schema.metadata.create_all(conn, tables=tables, checkfirst=True)
    conn.execute(insert(schema.store_meta).values(key="version", value=0))


def _server_tables(conn: Connection) -> None:
    schema.metadata.create_all(conn, tables=list(schema.SERVER_TABLES), checkfirst=True)


def _tag_entry_types(conn: Connection) -> None:
    """ukf_tags.entry_type (a copy of the entry's type) and the (slot, value, type) index.

    Idempotent: a store created by migration 1 from the current :mod:`kb.schema` has both."""
    columns = {c["name"] for c in inspect(conn).get_columns("ukf_tags")}
    if "entry_type" not in columns:
        conn.execute(text("ALTER TABLE ukf_tags ADD COLUMN entry_type VARCHAR(32)"))
    conn.execute(
        text(
            "UPDATE ukf_tags SET entry_type = "
            "(SELECT type FROM ukf_entries WHERE ukf_entries.id = ukf_tags.ukf_id) "
            "WHERE entry_type IS NULL"
        )
    )
    conn.execute(text("DROP INDEX IF EXISTS ix_ukf_tags_slot_value"))
    conn.execute(
        text(
            "CREATE INDEX IF NOT EXISTS ix_ukf_tags_slot_value_type "
            "ON ukf_tags (slot, value, entry_type)"
        )
    )


def _key_expiry(conn: Connection) -> None:
    """api_keys.expires_at (nullable: a key made before it never expires).

    Idempotent: a store created by migration 2 from the current :mod:`kb.schema` has it."""
    columns = {c["name"] for c in inspect(conn).get_columns("api_keys")}
    if "expires_at" not in columns:
        kind = schema.api_keys.c.expires_at.type.compile(dialect=conn.dialect)
        conn.execute(text(f"ALTER TABLE api_keys ADD COLUMN expires_at {kind}"))


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1, "entries, facet tables (tags, synonyms, related, auths), version", _initial_schema
    ),
    Migration(2, "server tables: api keys, jobs, job logs, audit log", _server_tables),
    Migration(3, "ukf_tags.entry_type and the (slot, value, entry_type) index", _tag_entry_types),
    Migration(4, "api_keys.expires_at", _key_expiry),
)
LATEST_VERSION = MIGRATIONS[-1].version


def current_version(conn: Connection) -> int:
    return int(
        conn.execute(
            select(func.coalesce(func.max(schema.schema_migrations.c.version), 0))
        ).scalar_one()
    )


def migrate(conn: Connection) -> int:
    """Bring the schema up to date inside the caller's write transaction; return its version.

    Every migration not recorded yet is applied, in order (they are idempotent, so one
    missing below the newest recorded, as in a store whose record was edited, is made too)."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK_KEY})
    schema.metadata.create_all(
        conn, tables=[schema.store_meta, schema.schema_migrations], checkfirst=True
    )
    version = current_version(conn)
    if version > LATEST_VERSION:
        raise SchemaVersionError(
            f"knowledge store schema is v{version}, newer than this Almanac (v{LATEST_VERSION})"
        )
    applied = set(conn.execute(select(schema.schema_migrations.c.version)).scalars())
    for migration in MIGRATIONS:
        if migration.version in applied:
            continue
        log.info("applying store migration %d: %s", migration.version, migration.description)
        migration.apply(conn)
        conn.execute(
            insert(schema.schema_migrations).values(
                version=migration.version,
                description=migration.description,
                applied_at=datetime.now(UTC),
            )
        )
        version = max(version, migration.version)
    return version
