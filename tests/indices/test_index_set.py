"""IndexSet: one assembly of the indices, kept current, rebuilt and swapped atomically."""

from __future__ import annotations

import time

import pytest

from indices.index_set import IndexNotReadyError, IndexSet
from indices.retriever import RetrievalOptions
from tests.indices.test_vector_index import WordHashEmbedder
from ukf import ColumnUKF, EnumUKF, ExperienceUKF, QueryContext, TableUKF

SHOP = QueryContext(database="shop")


@pytest.fixture()
def shop(store):
    orders = TableUKF.create("shop", "orders", synonyms=["purchases"])
    status = ColumnUKF.create(orders, "status")
    shipped = EnumUKF.create(status, "shipped", synonyms=["sent out"])
    past = ExperienceUKF.create(
        "How many orders were shipped?",
        "SELECT count(*) FROM orders WHERE status = 'shipped'",
        database="shop",
        labeled=True,
    )
    store.upsert_many([orders, status, shipped, past])
    return {"orders": orders, "status": status, "shipped": shipped, "past": past}


def _until(condition, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_built_with_an_embedder_it_has_every_index_and_one_retriever_over_them(store, shop):
    indices = IndexSet.build(store, WordHashEmbedder())
    built = indices.current()
    assert built.vectors is not None and built.experiences is not None
    assert indices.status()["ready"] and indices.status()["version"] == store.version
    retriever = indices.retriever(RetrievalOptions(budget_tokens=800))
    assert retriever.strings is built.strings and retriever.graph is built.graph
    assert retriever.experiences is built.experiences and retriever.facets is indices.facets
    assert retriever.options.budget_tokens == 800
    evidence = retriever.retrieve("orders sent out", SHOP)
    assert {shop["orders"].id, shop["shipped"].id, shop["past"].id} <= set(evidence.ids())
    indices.stop()


def test_a_retriever_without_options_takes_the_sets_own(store, shop):
    indices = IndexSet.build(store, retrieval=RetrievalOptions(hops=1, mined_by_facet=True))
    assert indices.retriever().options == RetrievalOptions(hops=1, mined_by_facet=True)
    assert indices.retriever(RetrievalOptions(hops=0)).options.hops == 0
    assert IndexSet.build(store).retriever().options == RetrievalOptions()


def test_without_an_embedder_string_graph_and_facets_only(store, shop):
    indices = IndexSet.build(store)
    assert indices.current().vectors is None and indices.experiences is None
    with pytest.raises(IndexNotReadyError) as off:
        _ = indices.vectors
    assert not off.value.configured
    evidence = indices.retriever().retrieve("orders sent out", SHOP)
    assert shop["shipped"].id in evidence.ids() and not evidence.ids("experience")
    without_vectors = IndexSet.build(store, WordHashEmbedder(), vectors=False)
    assert without_vectors.current().vectors is None and without_vectors.experiences is not None


def test_nothing_is_served_before_the_first_build(store, shop):
    indices = IndexSet(store, WordHashEmbedder())
    assert not indices.status()["ready"] and not indices.wait_ready(0)
    with pytest.raises(IndexNotReadyError, match="still being built") as building:
        indices.retriever()
    assert building.value.configured
    assert indices.refresh() is False  # nothing to refresh yet


def test_a_retriever_of_a_set_that_does_not_follow_the_store_refreshes_it(store, shop):
    indices = IndexSet.build(store, WordHashEmbedder())
    retriever = indices.retriever()
    cancelled = EnumUKF.create(shop["status"], "cancelled", synonyms=["called off"])
    store.upsert(cancelled)
    retriever.refresh()  # what retrieve does first
    retriever.strings.wait()
    assert cancelled.id in retriever.retrieve("orders called off", SHOP).ids()
    assert indices.current().strings.version == store.version


def test_a_rebuild_swaps_a_new_generation_in_and_old_retrievers_keep_working(store, shop):
    indices = IndexSet.build(store, WordHashEmbedder())
    old = indices.retriever()
    old_generation = indices.current()
    summary = indices.rebuild()
    assert summary["version"] == store.version and summary["experiences"] == 1
    assert indices.current() is not old_generation
    new = indices.retriever()
    assert new.strings is not old.strings
    for retriever in (old, new):
        assert shop["shipped"].id in retriever.retrieve("orders sent out", SHOP).ids()


def test_started_it_builds_in_the_background_and_follows_the_store(store, shop):
    indices = IndexSet(store, WordHashEmbedder(), refresh_s=0.05)
    indices.start()
    try:
        assert indices.wait_ready(30) and indices.following
        retriever = indices.retriever()
        returned = EnumUKF.create(shop["status"], "returned", synonyms=["sent back"])
        store.upsert(returned)
        # the thread follows the store; the retriever itself does not refresh
        assert _until(lambda: indices.current().strings.version == store.version)
        retriever.strings.wait()
        assert returned.id in retriever.retrieve("orders sent back", SHOP).ids()
    finally:
        indices.stop()
    assert not indices.following


def test_a_failed_build_is_reported_and_a_rebuild_can_recover(store, shop, monkeypatch):
    indices = IndexSet(store, refresh_s=0.05)
    broken = RuntimeError("the store went away")

    def fail(_store):
        raise broken

    monkeypatch.setattr("indices.index_set.StringIndex.from_store", fail)
    indices.start()
    assert _until(lambda: indices.status()["error"] is not None)
    indices.stop()
    assert "the store went away" in indices.status()["error"]
    with pytest.raises(IndexNotReadyError, match="the store went away"):
        indices.retriever()
    monkeypatch.undo()
    indices.rebuild()
    assert indices.status()["ready"] and indices.status()["error"] is None
