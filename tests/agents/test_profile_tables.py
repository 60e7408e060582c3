"""The asker's own tables: "our" revenue read from the table of the asker's brand when the
model read another brand's, on the SQL, and through the whole chain on a real database;
never when the question names another brand, says nothing of "our", or compares brands."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from agents.pipeline import ModelTier, Pipeline
from agents.sql.profile_tables import OwnTables, own_tables_of, with_own_tables
from indices.embeddings import HashingEmbedder
from indices.index_set import IndexSet
from kb.profile.profiler import ProfileOptions, profile_database
from kb.store import KnowledgeStore
from kb.target.database import Database
from tests.agents.scripted import ScriptedLLM, sql_reply
from ukf import QueryContext, RuleUKF

RULE = "Our brand means the user's department"
SPEC = {
    "attribute": "department",
    "words": ["we", "our", "us"],
    "entities": {
        "NV": {"names": ["Nova"], "tables": {"income": "income_nova", "ledger": "ledger_nova"}},
        "AU": {"names": ["Aurora"], "tables": {"income": "income_aurora"}},
    },
}
NOVA = {"department": "NV"}


def _rule(spec: object = SPEC) -> RuleUKF:
    return RuleUKF.create(RULE, RULE, kind="intent", database="fin",
                          content_resources={"profile_tables": spec})  # fmt: skip


def test_the_mapping_applies_to_a_first_person_question_of_an_entity_s_user():
    own = own_tables_of(_rule(), "What was our revenue last month?", NOVA)
    assert own == OwnTables({"income_aurora": "income_nova"}, RULE)
    for question, profile in [
        ("What was the revenue last month?", NOVA),  # no "our"
        ("Our revenue against Aurora's?", NOVA),  # names another brand
        ("What was our revenue?", {"department": "ALL"}),  # no brand of its own
        ("What was our revenue?", {}),
        ("Tour revenue?", NOVA),  # "our" only inside a word
    ]:
        assert own_tables_of(_rule(), question, profile) is None, question
    nova_income_is_a_number = {**SPEC["entities"]["NV"], "tables": {"income": 7}}
    for broken in (
        {"attribute": "department"},
        {**SPEC, "entities": ["NV"]},
        {**SPEC, "words": "our"},  # a string, not a list: would read letter by letter
        {**SPEC, "entities": {**SPEC["entities"], "NV": nova_income_is_a_number}},
        "income_nova",
    ):
        assert own_tables_of(_rule(broken), "our revenue", NOVA) is None, broken


OWN = OwnTables({"income_aurora": "income_nova"}, RULE)


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT SUM(amount) FROM income_aurora", "SELECT SUM(amount) FROM income_nova"),
        # columns qualified by the table follow it; an alias stays
        (
            "SELECT SUM(income_aurora.amount) FROM income_aurora WHERE income_aurora.year = 2024",
            "SELECT SUM(income_nova.amount) FROM income_nova WHERE income_nova.year = 2024",
        ),
        (
            "SELECT SUM(a.amount) FROM income_aurora AS a",
            "SELECT SUM(a.amount) FROM income_nova AS a",
        ),
        # a qualifier that is another source's alias keeps pointing at that source
        (
            "SELECT income_aurora.rate FROM income_aurora AS ia JOIN fx AS income_aurora ON 1 = 1",
            "SELECT income_aurora.rate FROM income_nova AS ia JOIN fx AS income_aurora ON 1 = 1",
        ),
        # the reasoning header stays as written
        (
            "-- from income_aurora\nSELECT amount FROM income_aurora",
            "-- from income_aurora\nSELECT amount FROM income_nova",
        ),
    ],
)
def test_another_brand_s_table_becomes_the_asker_s(sql, expected):
    swapped = with_own_tables(sql, OWN, "sqlite")
    assert swapped is not None and swapped.sql == expected
    assert swapped.notes == [f"the asker's table: income_nova for income_aurora ({RULE})"]


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT SUM(amount) FROM income_nova",  # already the asker's
        "SELECT SUM(amount) FROM regions",
        # the asker's table beside another brand's: a comparison, as written
        "SELECT (SELECT SUM(amount) FROM income_nova) - (SELECT SUM(amount) FROM income_aurora)",
        "SELECT FROM WHERE (",
        # a CTE named like the table is the query's own, as written
        "WITH income_aurora AS (SELECT * FROM income_aurora WHERE y = 1) "
        "SELECT SUM(amount) FROM income_aurora",
    ],
)
def test_the_asker_s_table_a_comparison_and_other_tables_are_left_alone(sql):
    assert with_own_tables(sql, OWN, "sqlite") is None


@pytest.fixture
def brands(tmp_path: Path):
    path = tmp_path / "fin.sqlite"
    with sqlite3.connect(path) as connection:
        for table, amount in (("income_nova", 10.0), ("income_aurora", 90.0)):
            connection.execute(f"CREATE TABLE {table} (period TEXT, amount REAL)")
            connection.execute(f"INSERT INTO {table} VALUES ('202407', ?)", (amount,))
    store = KnowledgeStore(f"sqlite:///{tmp_path / 'knowledge.db'}")
    database = Database(f"sqlite:///{path}")
    profile_database(database, store, database_name="fin", options=ProfileOptions(progress=False))
    store.upsert(_rule())
    yield store, database
    database.close()
    store.close()


def test_the_chain_reads_our_revenue_from_the_asker_s_brand(brands):
    store, database = brands
    llm = ScriptedLLM([sql_reply("SELECT SUM(amount) FROM income_aurora")] * 2)
    pipeline = Pipeline(
        store=store,
        retriever=IndexSet.build(store, HashingEmbedder()).retriever(),
        database=database,
        database_name="fin",
        tiers=[ModelTier("scripted", llm)],
    )
    ours = pipeline.ask("What was our revenue?", QueryContext(user_profile=NOVA))
    assert ours.sql == "SELECT SUM(amount) FROM income_nova" and ours.rows == [[10.0]]
    theirs = pipeline.ask("Our revenue against Aurora's?", QueryContext(user_profile=NOVA))
    assert theirs.sql == "SELECT SUM(amount) FROM income_aurora" and theirs.rows == [[90.0]]
