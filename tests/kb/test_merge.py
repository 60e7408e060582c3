"""The four merge rules for mined knowledge (docs/architecture.md, Knowledge store)."""

from kb.merge import merge_mined
from ukf import ColumnUKF, ExperienceUKF, KnowledgeUKF, SynonymUKF, TableUKF


def _mined(name, content, **fields):
    fields = {"source": "auto", "creator": "miner", **fields}
    return KnowledgeUKF.create(name, content, **fields)


def test_rule1_same_id_and_content_unions_synonyms(store):
    old = _mined("BCR", "actual / budget", synonyms=["bcr"])
    store.upsert(old)
    report = merge_mined(store, [_mined("BCR", "actual / budget", synonyms=["budget rate", "bcr"])])
    [decision] = report.decisions
    assert (decision.action, decision.rule, decision.existing_id) == ("merged", 1, old.id)
    assert store.get(old.id).synonyms == ["bcr", "budget rate"]
    assert store.count() == 1


def test_rule1_mining_the_same_again_writes_nothing_and_a_new_source_is_added(store):
    old = _mined("BCR", "actual / budget", synonyms=["bcr"], parents=["exp-1"])
    store.upsert(old)
    version = store.version
    again = merge_mined(store, [_mined("BCR", "actual / budget", parents=["exp-1"])])
    assert again.counts() == {"merged": 1} and again.version is None
    assert store.version == version  # nothing new: nothing written
    merge_mined(store, [_mined("BCR", "actual / budget", parents=["exp-2"])])
    assert store.version > version and store.get(old.id).parents == ["exp-1", "exp-2"]
    column = ColumnUKF.create(TableUKF.create("fin", "budget"), "bcr")
    store.upsert(column)
    merge_mined(store, [column.clone(parents=["exp-3"])])
    assert store.get(column.id).parents == column.parents  # profiled knowledge keeps its own


def test_rule2_conflicts_with_schema_labeled_or_verified_entries_are_discarded(store):
    table = TableUKF.create("autofin", "income_nova", description="Income of Nova")
    column = ColumnUKF.create(table, "amt", description="Amount in USD")
    labeled = ExperienceUKF.create("Nova revenue?", "SELECT 1", database="autofin", labeled=True)
    verified = _mined("fiscal year", "starts in January", last_verified=table.timestamp)
    store.upsert_many([table, column, labeled, verified])
    candidates = [
        column.clone(content_resources={**column.content_resources, "data_type": "TEXT"}),
        labeled.clone(content_resources={**labeled.content_resources, "sql": "SELECT 2"}),
        verified.clone(content="starts in April", last_verified=None),
    ]
    report = merge_mined(store, candidates)
    assert [(d.action, d.rule) for d in report.decisions] == [("discarded", 2)] * 3
    assert store.get(column.id).content_resources["data_type"] == ""
    assert store.count() == 4


def test_rule3_conflicting_mined_contents_are_all_dropped(store):
    earlier = _mined("HQ", "headquarters entity", creator="miner-1")
    store.upsert(earlier)
    report = merge_mined(
        store,
        [_mined("HQ", "head office", creator="miner-2"), _mined("HQ", "holding", creator="m3")],
    )
    assert report.counts() == {"dropped": 3}
    assert {d.rule for d in report.decisions} == {3}
    assert store.get(earlier.id).inactive_mark
    assert store.count() == 0


def test_rule4_new_mined_entries_rank_below_authoritative_ones(store):
    table = TableUKF.create("autofin", "income_nova", priority=-3)
    store.upsert(table)
    alias = SynonymUKF.create("Nova P&L", table, source="auto", priority=50)
    report = merge_mined(store, [alias])
    assert [(d.action, d.rule) for d in report.decisions] == [("inserted", 4)]
    stored = store.get(alias.id)
    assert stored.priority < -3
    assert store.search_ids()[0] == table.id


def test_identical_candidates_in_one_batch_become_one_entry(store):
    a = _mined("CN", "China", synonyms=["PRC"])
    b = _mined("CN", "China", synonyms=["Mainland"])
    report = merge_mined(store, [a, b])
    assert [d.action for d in report.decisions] == ["inserted", "merged"]
    assert store.get(a.id).synonyms == ["PRC", "Mainland"]


def test_a_dry_run_reports_without_writing(store):
    version = store.version
    report = merge_mined(store, [_mined("x", "y")], apply=False)
    assert report.counts() == {"inserted": 1} and report.version is None
    assert store.version == version and store.count() == 0


def test_other_workspaces_do_not_conflict(store):
    store.upsert(_mined("HQ", "headquarters", workspace="emea"))
    report = merge_mined(store, [_mined("HQ", "holding", workspace="apac")])
    assert report.counts() == {"inserted": 1}
