"""Tables reached through stored values: synonyms of a dimension's codes, partitioned facts."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.rag.agent import RagAgent
from agents.rag.schema_slice import SchemaCatalog
from agents.rag.value_catalog import ValueCatalog
from indices.index_set import IndexSet
from kb.profile.profiler import ProfileOptions, profile_database
from kb.store import KnowledgeStore
from kb.target.database import Database
from ukf import QueryContext, SynonymUKF

BRANDS = {"ZP": ("ZP1", "ZP3"), "AU": ("AU5", "AU7"), "VG": ("VGS", "VGR")}


def _partitioned_database(path: Path) -> None:
    """Per brand: an income table and a ledger whose every row holds the brand's code; a
    models dimension with every brand's model codes."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE models (model_code TEXT, model_name TEXT, dept_code TEXT)")
    for dept, models in BRANDS.items():
        conn.executemany(
            "INSERT INTO models VALUES (?, ?, ?)", [(m, f"{dept} {m}", dept) for m in models]
        )
        brand = dept.lower()
        conn.execute(
            f"CREATE TABLE income_{brand} (period TEXT, dept_code TEXT, model_code TEXT, "
            "ptd_qty INTEGER, ptd_amt_usd REAL)"
        )
        conn.execute(
            f"CREATE TABLE ledger_{brand} (invoice_no TEXT, period TEXT, dept_code TEXT, "
            "model_code TEXT, units INTEGER)"
        )
        for i in range(30):
            model = models[i % 2]
            conn.execute(
                f"INSERT INTO income_{brand} VALUES (?, ?, ?, ?, ?)",
                (f"2024{i % 12 + 1:02d}", dept, model, i, 10.0 * i),
            )
            conn.execute(
                f"INSERT INTO ledger_{brand} VALUES (?, ?, ?, ?, ?)",
                (f"{dept}-{i:04d}", f"2024{i % 12 + 1:02d}", dept, model, i % 5),
            )
    conn.commit()
    conn.close()


@pytest.fixture
def partitioned(tmp_path: Path) -> Iterator[tuple[KnowledgeStore, RagAgent]]:
    _partitioned_database(tmp_path / "cars.sqlite")
    store = KnowledgeStore(f"sqlite:///{tmp_path / 'knowledge.db'}")
    database = Database(f"sqlite:///{tmp_path / 'cars.sqlite'}")
    profile_database(database, store, database_name="cars", options=ProfileOptions(progress=False))
    zp3 = next(
        e
        for e in store.iterate(type="enum")
        if e.content_resources.get("table") == "models" and e.content_resources["value"] == "ZP3"
    )
    store.upsert(SynonymUKF.create("Gale", zp3, database="cars"))
    # small schema budgets, so that the agent slices this 7-table database
    agent = RagAgent(IndexSet.build(store).retriever(), SchemaCatalog(store, "cars"))
    agent.options.whole_schema_tables = 3
    agent.options.schema_tokens = 150
    agent.options.stable_schema = False  # the question's slice, not the overview
    yield store, agent
    database.close()
    store.close()


def test_holders_and_siblings(partitioned):
    store, _ = partitioned
    values = ValueCatalog(store, "cars")
    assert [(h.table, h.column) for h in values.holders("ZP3")] == [
        ("income_zp", "model_code"),
        ("ledger_zp", "model_code"),
        ("models", "model_code"),
    ]
    assert values.holders("zp3") == values.holders("ZP3")  # case-insensitive fallback
    assert values.holders("nothing") == []
    identity = [h for h in values.holders("VG") if h.identifies_table]
    assert {h.table for h in identity} == {"income_vg", "ledger_vg"}
    assert values.siblings("income_vg") == ["ledger_vg"]
    assert values.siblings("models") == []


def test_a_synonym_of_a_dimension_code_brings_the_facts_that_hold_it(partitioned):
    _, agent = partitioned
    rag = agent.run("How many Gales did we sell?")
    assert set(rag.tables[:2]) == {"income_zp", "ledger_zp"}, rag.tables
    assert "CREATE TABLE income_zp" in rag.schema and "CREATE TABLE ledger_zp" in rag.schema


def test_the_profile_links_through_stored_codes_even_short_ones(partitioned):
    _, agent = partitioned
    rag = agent.run("Our revenue?", QueryContext(user_profile={"department": "AU"}))
    assert set(rag.tables[:2]) == {"income_au", "ledger_au"}, rag.tables
    assert "profile department=AU -> income_au.dept_code = 'AU'" in rag.hints


def test_the_predicate_checker_knows_synonyms_in_every_column_holding_the_value(partitioned):
    from agents.sql.predicates import PredicateChecker

    store, _ = partitioned
    checker = PredicateChecker(store, "cars")
    (issue,) = checker.check("SELECT sum(ptd_qty) FROM income_zp WHERE model_code = 'Gale'")
    assert (issue.table, issue.suggestions, issue.certain) == ("income_zp", ["ZP3"], True)
    (close,) = checker.check("SELECT sum(ptd_qty) FROM income_zp WHERE model_code = 'GAL'")
    assert close.suggestions[0] == "ZP3" and not close.certain
    assert checker.check("SELECT sum(ptd_qty) FROM income_zp WHERE model_code = 'ZP3'") == []
