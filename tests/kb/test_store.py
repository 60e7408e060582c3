"""The knowledge store, on SQLite and PostgreSQL alike."""

import pytest

from kb.errors import KnowledgeNotFoundError
from kb.migrations import LATEST_VERSION
from kb.store import KnowledgeStore
from kb.visibility import Reader
from tests.support.samples import every_template
from ukf import Auth, BaseUKF, KnowledgeUKF, RuleUKF, TableUKF


def _by_id(entries):
    return {e.id: e for e in entries}


def test_every_template_round_trips_through_the_store(store):
    entries = every_template()
    store.upsert_many(entries)
    for entry in entries:
        again = store.get(entry.id)
        assert type(again) is type(entry)
        assert again == entry
        assert again.content_hash == entry.content_hash
    assert store.count() == len(entries)


def test_upsert_replaces_by_id_and_keeps_one_row(store):
    entry = KnowledgeUKF.create("BCR", "actual / budget", synonyms=["bcr"])
    store.upsert(entry)
    entry.content = "actual / budget in percent"
    entry.synonyms = ["budget completion"]
    store.upsert(entry)
    assert store.count() == 1
    assert store.get(entry.id).content == "actual / budget in percent"
    assert store.search_ids(synonym="BCR") == []
    assert store.search_ids(synonym="budget completion") == [entry.id]


def test_every_write_bumps_the_version_and_changes_are_listed(store):
    start = store.version
    first = store.upsert(KnowledgeUKF.create("a", "1"))
    second = store.upsert_many([KnowledgeUKF.create("b", "2"), KnowledgeUKF.create("c", "3")])
    assert start < first < second == store.version
    assert len(store.changes_since(first)) == 2
    assert len(store.changes_since(start)) == 3
    written = store.written_since(start)
    assert [(seq, type_) for seq, _id, type_ in written] == [
        (first, "knowledge"),
        (second, "knowledge"),
        (second, "knowledge"),
    ]
    assert store.written_since(second) == []


def test_get_of_an_unknown_id_names_it(store):
    with pytest.raises(KnowledgeNotFoundError, match="deadbeef"):
        store.get("deadbeef")
    assert store.get_many(["deadbeef"]) == {}


def test_filters_by_type_collection_tags_and_synonym_prefix(store):
    entries = every_template()
    store.upsert_many(entries)
    assert {e.type for e in store.iterate(type="column")} == {"column"}
    assert store.count(type=["table", "column"]) == 3
    assert store.count(collection="schema") == 4
    assert store.count(tags=["[TABLE:sales_ledger_nova]"]) == 4
    assert store.count(tags={"COLUMN": ["model", "region"]}) == 3
    assert store.count(tags=["[TABLE:sales_*]", "[COLUMN:model]"]) == 2
    assert store.count(tags=["[TABLE:sales_%]"]) == 0
    table = next(e for e in entries if e.type == "table")
    assert store.search_ids(synonym_prefix="nova s") == [table.id]
    assert store.count(related_to=table.id) == 2
    with pytest.raises(TypeError, match="colour"):
        store.count(colour="red")


def test_search_orders_by_priority(store):
    low = KnowledgeUKF.create("low", "x", priority=-5)
    high = KnowledgeUKF.create("high", "x", priority=10)
    mid = KnowledgeUKF.create("mid", "x")
    store.upsert_many([low, high, mid])
    assert [e.name for e in store.search(type="knowledge")] == ["high", "mid", "low"]
    assert store.search_ids(type="knowledge", limit=1) == [high.id]
    assert store.min_priority() == -5


def test_iterate_pages_through_everything(store):
    store.upsert_many(KnowledgeUKF.create(f"k{i:03d}", str(i)) for i in range(120))
    names = [e.name for e in store.iterate(batch_size=7)]
    assert len(names) == 120 and len(set(names)) == 120


def test_remove_is_lazy_then_purge_deletes(store):
    keep, drop = KnowledgeUKF.create("keep", "1"), KnowledgeUKF.create("drop", "2")
    store.upsert_many([keep, drop])
    store.remove(drop.id)
    assert store.count() == 1 and store.count(active=None) == 2
    assert store.get(drop.id).inactive_mark
    assert store.purge(ids=[keep.id]) == 0  # active entries are never purged
    store.restore(drop.id)
    assert store.count() == 2
    store.remove([drop.id])
    assert store.purge() == 1
    assert not store.exists(drop.id) and store.exists(keep.id)
    assert store.count(active=None) == 1


def test_remove_of_unknown_ids_changes_nothing(store):
    entry = KnowledgeUKF.create("keep", "1")
    store.upsert(entry)
    version = store.version
    with pytest.raises(KnowledgeNotFoundError, match="nope"):
        store.remove([entry.id, "nope"])
    assert store.version == version and store.count() == 1


def test_a_store_reopens_with_its_content_and_version(store_url):
    with KnowledgeStore(store_url) as first:
        first.upsert_many(every_template())
        version = first.version
    with KnowledgeStore(store_url) as second:
        assert second.version == version and second.count() == len(every_template())
        assert second.schema_version == LATEST_VERSION


def test_entries_survive_with_unicode_and_nested_resources(store):
    entry = RuleUKF.create(
        "货币", "默认货币按用户地区 — €", content_resources={"map": {"CN": "CNY", "EU": ["EUR"]}}
    )
    store.upsert(entry)
    assert store.get(entry.id) == entry
    assert BaseUKF.from_dict(store.get(entry.id).to_dict()) == entry


def test_a_failing_upsert_writes_nothing(store, monkeypatch):
    from kb.rows import RowBatch

    entries = [TableUKF.create("db", f"t{i}") for i in range(5)]
    real_add = RowBatch.add

    def add_then_fail(self, entry, seq):
        if entry.name == "t3":
            raise RuntimeError("disk on fire")
        real_add(self, entry, seq)

    monkeypatch.setattr(RowBatch, "add", add_then_fail)
    version = store.version
    with pytest.raises(RuntimeError, match="disk on fire"):
        store.upsert_many(entries, batch_size=2)  # t0, t1 were already written in batch 1
    assert store.count() == 0 and store.version == version


def test_documents_are_the_entries_as_dicts_with_the_same_visibility(store):
    entries = every_template()
    secret = KnowledgeUKF.create("salary bands", "...", auths=[Auth(user="hr")])
    store.upsert_many([*entries, secret])
    ids = [e.id for e in reversed(entries)] + ["absent", secret.id]
    documents = store.get_documents(ids)
    assert list(documents) == [*(e.id for e in reversed(entries)), secret.id]
    for entry in entries:
        assert documents[entry.id] == entry.to_dict()
    assert secret.id not in store.get_documents(ids, reader=Reader(user="alice"))
    assert secret.id in store.get_documents(ids, reader=Reader(user="hr"))
