"""The store schema is versioned; opening migrates, and a newer schema is refused."""

from datetime import UTC, datetime

import pytest
from sqlalchemy import create_engine, delete, insert, inspect, select, text

from kb import schema
from kb.errors import SchemaVersionError
from kb.migrations import LATEST_VERSION
from kb.store import KnowledgeStore
from ukf import ExperienceUKF, TableUKF


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


def test_a_v2_store_gains_tag_entry_types_and_keeps_its_facets(store_url):
    """Migration 3 on a store written before ukf_tags.entry_type existed."""
    with KnowledgeStore(store_url) as store:
        store.upsert_many(
            [
                TableUKF.create("shop", "orders", tags=["[DATABASE:shop]"]),
                ExperienceUKF.create("how many orders?", "SELECT 1", database="shop"),
            ]
        )
    engine = create_engine(store_url)
    with engine.begin() as conn:  # back to the v2 layout
        conn.execute(text("DROP INDEX ix_ukf_tags_slot_value_type"))
        conn.execute(text("ALTER TABLE ukf_tags DROP COLUMN entry_type"))
        conn.execute(text("CREATE INDEX ix_ukf_tags_slot_value ON ukf_tags (slot, value)"))
        conn.execute(text("ALTER TABLE api_keys DROP COLUMN expires_at"))  # migration 4
        conn.execute(
            delete(schema.schema_migrations).where(schema.schema_migrations.c.version >= 3)
        )
    engine.dispose()
    with KnowledgeStore(store_url) as store:
        assert store.schema_version == LATEST_VERSION
        tables = store.search(tags={"DATABASE": "shop"}, type="table")
        assert [e.name for e in tables] == ["orders"]
        assert len(store.search(tags={"DATABASE": "shop"})) == 2
    engine = create_engine(store_url)
    indexes = {i["name"] for i in inspect(engine).get_indexes("ukf_tags")}
    with engine.connect() as conn:
        types = conn.execute(text("SELECT DISTINCT entry_type FROM ukf_tags")).scalars().all()
    engine.dispose()
    assert "ix_ukf_tags_slot_value_type" in indexes and "ix_ukf_tags_slot_value" not in indexes
    assert sorted(types) == ["experience", "table"]
