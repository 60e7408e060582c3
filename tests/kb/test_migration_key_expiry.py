"""Migration 4: ``api_keys.expires_at``, added to a store made at version 3, found on a new one."""

from datetime import UTC, datetime, timedelta

from sqlalchemy import create_engine, delete, inspect, select, text

from kb import schema
from kb.migrations import LATEST_VERSION, _key_expiry
from kb.store import KnowledgeStore
from server.keys import KeyStore

PEPPER = b"migration-test-pepper-0123456789"


def _columns(url: str) -> dict[str, dict]:
    engine = create_engine(url)
    try:
        return {c["name"]: c for c in inspect(engine).get_columns("api_keys")}
    finally:
        engine.dispose()


def test_a_new_store_has_key_expiry_and_the_migration_is_idempotent(store_url):
    KnowledgeStore(store_url).close()
    assert "expires_at" in _columns(store_url)
    engine = create_engine(store_url)
    with engine.begin() as conn:  # migration 4 again on the latest shape: nothing to do
        _key_expiry(conn)
        versions = conn.execute(select(schema.schema_migrations.c.version)).scalars().all()
    engine.dispose()
    assert 4 in versions and LATEST_VERSION >= 4
    assert list(_columns(store_url)).count("expires_at") == 1


def test_a_v3_store_gains_key_expiry_and_its_keys_keep_working(store_url):
    with KnowledgeStore(store_url):
        pass
    engine = create_engine(store_url)
    keys = KeyStore(engine, PEPPER)
    old, old_secret = keys.create(role="analyst", user="ana", label="made at v3")
    with engine.begin() as conn:  # back to the v3 layout
        conn.execute(text("ALTER TABLE api_keys DROP COLUMN expires_at"))
        conn.execute(
            delete(schema.schema_migrations).where(schema.schema_migrations.c.version == 4)
        )
    engine.dispose()
    assert "expires_at" not in _columns(store_url)

    with KnowledgeStore(store_url) as store:
        assert store.schema_version == LATEST_VERSION
    column = _columns(store_url)["expires_at"]
    assert column["nullable"]
    engine = create_engine(store_url)
    try:
        keys = KeyStore(engine, PEPPER)
        found = keys.verify(old_secret)
        assert found is not None and found.id == old.id and found.expires_at is None
        assert found.label == "made at v3" and found.active
        later = datetime.now(UTC) + timedelta(days=3)
        new, new_secret = keys.create(role="ops", user="olga", expires_at=later)
        stored = keys.get(new.id).expires_at
        assert stored is not None and stored.tzinfo is not None
        assert abs((stored - later).total_seconds()) < 1e-3
        assert keys.verify(new_secret) is not None
    finally:
        engine.dispose()
