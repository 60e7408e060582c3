"""The store schema is versioned; opening migrates, and a newer schema is refused."""

from datetime import UTC, datetime

import pytest
from sqlalchemy import create_engine, insert, inspect, select

from kb import schema
from kb.errors import SchemaVersionError
from kb.migrations import LATEST_VERSION
from kb.store import KnowledgeStore


def test_opening_creates_every_table_and_records_the_migration(store_url):
    KnowledgeStore(store_url).close()
    engine = create_engine(store_url)
    assert set(schema.metadata.tables) <= set(inspect(engine).get_table_names())
    with engine.connect() as conn:
        versions = conn.execute(select(schema.schema_migrations.c.version)).scalars().all()
    engine.dispose()
    assert versions == list(range(1, LATEST_VERSION + 1))


def test_a_store_from_a_newer_almanac_is_refused(store_url):
    KnowledgeStore(store_url).close()
    engine = create_engine(store_url)
    with engine.begin() as conn:
        conn.execute(
            insert(schema.schema_migrations).values(
                version=LATEST_VERSION + 1, description="future", applied_at=datetime.now(UTC)
            )
        )
    engine.dispose()
    with pytest.raises(SchemaVersionError, match=f"v{LATEST_VERSION + 1}"):
        KnowledgeStore(store_url)
