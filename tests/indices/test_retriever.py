"""The fused retriever: matches, facets, experiences, expansion, triggers, budget, reasons."""

from __future__ import annotations

from datetime import datetime

import pytest

from indices.index_set import IndexSet
from indices.retriever import RetrievalOptions, Retriever
from tests.indices.test_vector_index import WordHashEmbedder
from ukf import (
    Auth,
    ColumnUKF,
    EnumUKF,
    ExperienceUKF,
    ForeignKey,
    MetricUKF,
    QueryContext,
    Reader,
    RuleUKF,
    SynonymUKF,
    TableUKF,
)

AUTOFIN = QueryContext(database="autofin")


@pytest.fixture()
def kb(store):
    income = TableUKF.create(
        "autofin",
        "income_nova",
        synonyms=["Nova income"],
        foreign_keys=[ForeignKey(columns=("region",), ref_table="regions", ref_columns=("code",))],
    )
    regions = TableUKF.create("autofin", "regions")
    region = ColumnUKF.create(income, "region")
    model = ColumnUKF.create(income, "model")
    amount = ColumnUKF.create(income, "ptd_amt_usd", synonyms=["revenue"])
    nv200 = EnumUKF.create(model, "NV-200")
    emea = EnumUKF.create(region, "EMEA", synonyms=["Europe"])
    flagship = SynonymUKF.create("Nova flagship", nv200, database="autofin")
    refresh = RuleUKF.create(
        "data refresh",
        "Before the 10th, this month means last month.",
        kind="temporal",
        database="autofin",
        priority=10,
        triggers={"query_time_window": {"day_of_month_to": 9}},
    )
    hq = RuleUKF.create(
        "headquarters",
        "Exclude HQ from rankings.",
        kind="validity",
        database="autofin",
        auths=[Auth(user="finance")],
    )
    bcr = MetricUKF.create("BCR", "actual / budget", database="autofin")
    other_db = TableUKF.create("shop", "orders", synonyms=["Nova income"])
    past = ExperienceUKF.create(
        "Nova revenue in Europe last year?", "SELECT 1", database="autofin", labeled=True
    )
    entries = locals().copy()
    entries.pop("store")
    store.upsert_many(entries.values())
    return entries


def _retriever(store, **options):
    return IndexSet.build(store, WordHashEmbedder()).retriever(RetrievalOptions(**options))


def test_a_matched_enum_brings_its_column_and_table_with_reasons(store, kb):
    evidence = _retriever(store).retrieve("Nova flagship sales in Europe", AUTOFIN)
    ids = set(evidence.ids())
    assert {
        kb["emea"].id,
        kb["region"].id,
        kb["income"].id,
        kb["flagship"].id,
        kb["nv200"].id,
        kb["model"].id,
    } <= ids
    by_id = {item.entry.id: item for item in evidence.items}
    assert "span" in by_id[kb["emea"].id].reasons
    assert by_id[kb["emea"].id].spans == [(23, 29)]
    assert "neighbour" in by_id[kb["region"].id].reasons
    assert kb["other_db"].id not in ids  # another database's table is out of scope


def test_context_facets_triggers_and_visibility(store, kb):
    retriever = _retriever(store)
    early = retriever.retrieve(
        "revenue this month", AUTOFIN.model_copy(update={"query_time": datetime(2025, 3, 5, 9)})
    )
    late = retriever.retrieve(
        "revenue this month", AUTOFIN.model_copy(update={"query_time": datetime(2025, 3, 15, 9)})
    )
    assert kb["refresh"].id in early.ids() and kb["refresh"].id not in late.ids()
    assert early.items[0].entry.id == kb["refresh"].id  # highest priority first
    assert kb["bcr"].id in early.ids()  # business knowledge of the database, by facet
    assert kb["hq"].id not in early.ids()
    finance = retriever.retrieve(
        "revenue",
        QueryContext(database="autofin", reader=Reader(user="ana", groups=frozenset({"finance"}))),
    )
    assert kb["hq"].id in finance.ids()


def test_experiences_join_paths_and_budget(store, kb):
    retriever = _retriever(store, budget_tokens=60)
    evidence = retriever.retrieve("Nova income by regions", AUTOFIN)
    assert evidence.tokens <= 60 and evidence.dropped
    full = _retriever(store).retrieve("Nova revenue in Europe last year?", AUTOFIN)
    assert kb["past"].id in full.ids("experience")
    paths = _retriever(store).retrieve("Nova income by regions", AUTOFIN)
    assert paths.join_paths and paths.join_paths[0][0]["columns"] == ["region"]


def test_the_retriever_follows_store_writes(store, kb):
    retriever = _retriever(store)
    assert kb["emea"].id in retriever.retrieve("Europe", AUTOFIN).ids()
    store.remove(kb["emea"].id)
    apac = EnumUKF.create(kb["region"], "APAC", synonyms=["Asia"])
    store.upsert(apac)
    retriever.refresh()
    retriever.strings.wait()  # the automaton is rebuilt in the background; searches never wait
    evidence = retriever.retrieve("Europe and Asia", AUTOFIN)
    assert kb["emea"].id not in evidence.ids() and apac.id in evidence.ids()


def test_a_rule_that_triggers_only_for_users_of_one_region(store, kb):
    euro = RuleUKF.create(
        "default currency EMEA",
        "Report amounts in EUR (ytd_amt_eur).",
        kind="intent",
        database="autofin",
        triggers={"user_profile_match": {"region": "EMEA"}},
    )
    store.upsert(euro)
    retriever = _retriever(store)
    emea = retriever.retrieve(
        "Nova revenue", QueryContext(database="autofin", user_profile={"region": "EMEA"})
    )
    apac = retriever.retrieve(
        "Nova revenue", QueryContext(database="autofin", user_profile={"region": "APAC"})
    )
    anonymous = retriever.retrieve("Nova revenue", AUTOFIN)
    assert euro.id in emea.ids()
    assert euro.id not in apac.ids() and euro.id not in anonymous.ids()


def test_the_experience_tier_is_the_experience_index_of_the_database(store, kb):
    retriever = _retriever(store)
    assert retriever.experiences is not None and retriever.experiences.size() == 1
    elsewhere = ExperienceUKF.create(
        "Nova revenue in Europe last year?", "SELECT 2", database="shop", labeled=True
    )
    later = ExperienceUKF.create(
        "Nova revenue in Europe this year?", "SELECT 3", database="autofin", labeled=True
    )
    store.upsert_many([elsewhere, later])
    retriever.refresh()  # the experience index follows the store like the others
    hits = retriever.nearest_experiences("Nova revenue in Europe last year?", "autofin")
    assert [h.ukf_id for h in hits] == [kb["past"].id, later.id]
    evidence = retriever.retrieve("Nova revenue in Europe last year?", AUTOFIN)
    assert evidence.ids("experience") == [kb["past"].id, later.id]
    assert retriever.nearest_experiences("anything", "autofin") and not Retriever(
        store, retriever.strings, retriever.graph
    ).nearest_experiences("anything", "autofin")


def test_experiences_keep_their_share_of_a_tight_budget(store, kb):
    question, context = "Nova revenue in Europe last year?", AUTOFIN
    full = _retriever(store).retrieve(question, context)
    past = next(i for i in full.items if i.entry.id == kb["past"].id)
    budget = past.tokens + 10  # room for the experience, not for the schema items before it
    starved = _retriever(store, budget_tokens=budget, experience_tokens=0)
    assert kb["past"].id not in starved.retrieve(question, context).ids()
    kept = _retriever(store, budget_tokens=budget).retrieve(question, context)
    assert kb["past"].id in kept.ids("experience") and kept.tokens <= budget and kept.dropped


def test_a_metric_named_by_the_question_is_not_crowded_out_by_the_columns_holding_its_word(store):
    # "Revenue" is a report-item value of every brand's wide table: more entries than a span
    # keeps (per_span); the metric the word names must keep its span all the same
    tables = [TableUKF.create("autofin", f"income_{brand}") for brand in "abcdefgh"]
    columns = [ColumnUKF.create(table, "report_item_level1") for table in tables]
    values = [EnumUKF.create(column, "Revenue") for column in columns]
    revenue = MetricUKF.create(
        "Revenue", "SUM(amount) WHERE report_item_level1 = 'Revenue'", database="autofin"
    )
    store.upsert_many([*tables, *columns, *values, revenue])
    evidence = _retriever(store, per_span=3).retrieve("Nova revenue in June", AUTOFIN)
    metric = next(item for item in evidence.items if item.entry.id == revenue.id)
    assert "span" in metric.reasons and metric.spans == [(5, 12)]
    assert len([i for i in evidence.items if i.entry.type == "enum" and i.spans]) == 3


def test_mined_knowledge_the_question_does_not_point_to_is_left_out(store, kb):
    """By default (``mined_by_facet=False``) a mined entry reached only by the database facet
    stays out of the evidence; named by the question, it is in; authoritative knowledge
    reached by the facet alone (BCR) is in either way. ``mined_by_facet=True`` shows it."""
    mined = MetricUKF.create(
        "churn quotient",
        "lost / kept",
        database="autofin",
        metadata={"mining": {"job_id": "job-1", "miner": "labeled", "status": "activated"}},
    )
    store.upsert(mined)
    retriever = _retriever(store)
    unrelated = retriever.retrieve("revenue by region", AUTOFIN)
    assert kb["bcr"].id in unrelated.ids() and mined.id not in unrelated.ids()
    named = retriever.retrieve("the churn quotient by region", AUTOFIN)
    (item,) = [i for i in named.items if i.entry.id == mined.id]
    assert "span" in item.reasons
    shown = _retriever(store, mined_by_facet=True).retrieve("revenue by region", AUTOFIN)
    assert mined.id in shown.ids()


def test_logged_repeats_of_a_question_do_not_push_out_its_worked_examples(store, kb):
    """Fewer labeled experiences than the tier fetches: the unlabeled ones fill it, and the
    logged repeats of the question score above every labeled one. The evidence keeps every
    labeled one (the only ones shown as examples) before any unlabeled."""
    question = "Nova revenue in Europe this year?"
    labeled = [
        kb["past"],
        ExperienceUKF.create(
            "Nova revenue in Asia this year?", "SELECT 2", database="autofin", labeled=True
        ),
    ]
    store.upsert(labeled[1])
    repeats = [question, f"{question} please", "Nova revenue in Europe for this year?"]
    logged = [
        ExperienceUKF.create(asked, f"SELECT {n}", database="autofin")
        for n, asked in enumerate(repeats)
    ]
    store.upsert_many(logged)
    retriever = _retriever(store)
    nearest = retriever.nearest_experiences(question, "autofin")
    assert {h.ukf_id for h in nearest} >= {e.id for e in labeled + logged}
    kept = retriever.retrieve(question, AUTOFIN).ids("experience")
    assert len(kept) == 3 and set(kept) >= {e.id for e in labeled}
