"""Faceted search: slot=value, several values, wildcards, filters, priority order."""

import pytest

from indices.facet import FacetIndex
from kb.visibility import Reader
from ukf import Auth, ColumnUKF, KnowledgeUKF, TableUKF


@pytest.fixture()
def facets(store):
    income = TableUKF.create("autofin", "income_nova", priority=5)
    ledger = TableUKF.create("autofin", "sales_ledger_nova")
    other = TableUKF.create("shop", "orders")
    columns = [ColumnUKF.create(income, "region"), ColumnUKF.create(ledger, "region")]
    secret = KnowledgeUKF.create(
        "payroll", "x", tags=["[DATABASE:autofin]"], auths=[Auth(user="hr")]
    )
    store.upsert_many([income, ledger, other, *columns, secret])
    return FacetIndex(store), income, ledger, other


def test_slot_value_ordered_by_priority(facets):
    index, income, ledger, _ = facets
    hits = index.search({"DATABASE": "autofin"}, type="table")
    assert [h.ukf_id for h in hits] == [income.id, ledger.id]
    assert hits[0].reason == "facet" and hits[0].phrase == "DATABASE=autofin"
    assert hits[0].score > hits[1].score


def test_several_values_per_slot_and_wildcards(facets):
    index, income, ledger, other = facets
    both = index.search({"TABLE": ["orders", "income_nova"]}, type="table")
    assert {h.ukf_id for h in both} == {income.id, other.id}
    wild = index.search(["[TABLE:*_nova]"], type="table")
    assert {h.ukf_id for h in wild} == {income.id, ledger.id}
    assert len(index.search(["[TABLE:*_nova]", "[COLUMN:region]"])) == 2


def test_combined_with_type_collection_and_visibility(facets):
    index, *_ = facets
    assert len(index.search({"DATABASE": "autofin"}, collection="schema")) == 4
    assert len(index.search({"DATABASE": "autofin"})) == 5
    assert len(index.search({"DATABASE": "autofin"}, reader=Reader(user="bob"))) == 4
    assert len(index.search({"DATABASE": "autofin"}, reader=Reader(user="hr"))) == 5
