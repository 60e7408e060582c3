"""StoreWatch: caches built from the store reload only when what they hold was written."""

from __future__ import annotations

from pathlib import Path

from agents.rag.store_watch import StoreWatch
from kb.store import KnowledgeStore
from ukf import ColumnUKF, ExperienceUKF, TableUKF


def test_only_watched_types_of_the_watched_database_count(tmp_path: Path) -> None:
    with KnowledgeStore(f"sqlite:///{tmp_path / 'k.db'}") as store:
        orders = TableUKF.create("shop", "orders")
        store.upsert(orders)
        watch = StoreWatch(store, ("table", "column"), "shop")
        assert watch.changed()  # the first look always reloads
        assert not watch.changed()
        store.upsert(ExperienceUKF.create("how many orders?", "SELECT 1", database="shop"))
        assert not watch.changed()  # a logged question moves the version, not the schema
        store.upsert(TableUKF.create("other", "orders"))
        assert not watch.changed()  # another database's table
        store.upsert(ColumnUKF.create(orders, "total", data_type="REAL"))
        store.upsert(ExperienceUKF.create("total?", "SELECT 2", database="shop"))
        assert watch.changed() and not watch.changed()
