"""Migration 2 adds the server's tables to stores written before it, keeping their entries."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import insert, inspect

from kb import schema
from kb.engine import create_store_engine, write_transaction
from kb.migrations import LATEST_VERSION, MIGRATIONS
from kb.store import KnowledgeStore
from tests.support.samples import every_template


def test_a_version_1_store_gains_the_server_tables(store_url):
    engine = create_store_engine(store_url)
    with write_transaction(engine) as conn:  # what Almanac before migration 2 left behind
        schema.metadata.create_all(conn, tables=[schema.store_meta, schema.schema_migrations])
        MIGRATIONS[0].apply(conn)
        conn.execute(
            insert(schema.schema_migrations).values(
                version=1, description=MIGRATIONS[0].description, applied_at=datetime.now(UTC)
            )
        )
    assert "jobs" not in inspect(engine).get_table_names()
    engine.dispose()
    with KnowledgeStore(store_url) as store:
        store.upsert_many(every_template())
    with KnowledgeStore(store_url) as store:
        assert store.schema_version == LATEST_VERSION and store.count() == len(every_template())
    engine = create_store_engine(store_url)
    tables = set(inspect(engine).get_table_names())
    engine.dispose()
    assert {t.name for t in schema.SERVER_TABLES} <= tables
