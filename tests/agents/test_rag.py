"""The RAG agent on a database too large to show whole: which tables, how, and which hints."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.rag.agent import RagAgent, RagOptions
from agents.rag.schema_slice import SchemaCatalog
from agents.sql.generate import SqlGenerator
from indices.index_set import IndexSet
from kb.profile.profiler import ProfileOptions, profile_database
from kb.store import KnowledgeStore
from kb.target.database import Database
from tests.agents.scripted import ScriptedLLM
from ukf import QueryContext, RuleUKF

BRANDS = ("aurora", "borealis", "helix", "nova", "orion", "titan", "vega", "zephyr")
MEASURES = [f"{p}_amt_{c}" for p in ("ptd", "ytd") for c in ("usd", "eur", "jpy", "gbp", "cny")]


def _wide_database(path: Path) -> None:
    """One wide income table per brand (every row names its brand) and a few small tables."""
    conn = sqlite3.connect(path)
    columns = ", ".join(
        [
            "period TEXT",
            "dept_name TEXT",
            "region_name TEXT",
            "report_item TEXT",
            *[f"attr_{i} TEXT" for i in range(12)],
            *[f"{m} REAL" for m in MEASURES],
        ]
    )
    for brand in BRANDS:
        conn.execute(f"CREATE TABLE income_{brand} ({columns})")
        width = 4 + 12 + len(MEASURES)
        rows = [
            (
                f"2024{m:02d}",
                brand.title(),
                region,
                item,
                *[f"x{i}" for i in range(12)],
                *[1.0] * len(MEASURES),
            )
            for m in range(1, 7)
            for region in ("Europe", "Asia")
            for item in ("Revenue", "Cost")
        ]
        conn.executemany(f"INSERT INTO income_{brand} VALUES ({', '.join('?' * width)})", rows)
    for name in ("fx_rates", "fiscal_calendar", "report_items", "regions", "departments"):
        conn.execute(f"CREATE TABLE {name} (code TEXT, label TEXT)")
        conn.executemany(f"INSERT INTO {name} VALUES (?, ?)", [("a", "b"), ("c", "d")])
    conn.commit()
    conn.close()


@pytest.fixture
def wide(tmp_path: Path) -> Iterator[RagAgent]:
    _wide_database(tmp_path / "fin.sqlite")
    store = KnowledgeStore(f"sqlite:///{tmp_path / 'knowledge.db'}")
    database = Database(f"sqlite:///{tmp_path / 'fin.sqlite'}")
    profile_database(database, store, database_name="fin", options=ProfileOptions(progress=False))
    # these tests are about the question's slice; the overview is tested on its own below
    options = RagOptions(stable_schema=False)
    yield RagAgent(IndexSet.build(store).retriever(), SchemaCatalog(store, "fin"), options)
    database.close()
    store.close()


def test_a_large_schema_is_sliced_and_the_tail_only_named(wide):
    catalog = wide.catalog
    everything = catalog.render(budget_tokens=400)  # a baseline: every table, one line each
    assert all(f"-- table income_{b}(" in everything for b in BRANDS[1:])
    sliced = catalog.slice(budget_tokens=400, listing_tokens=100)
    assert sliced.full and sliced.named and len(sliced.text) < 0.6 * len(everything)
    assert sliced.text.endswith("-- more tables: " + ", ".join(sliced.named))
    assert set(sliced.full + sliced.listed + sliced.named) == set(catalog.tables)


def test_the_table_the_question_names_by_value_comes_before_the_profiles(wide):
    profile = QueryContext(user_profile={"department": "Helix"})
    rag = wide.run("Aurora revenue in Europe in JPY for 202403?", profile)
    assert rag.tables[0] == "income_aurora"
    assert "CREATE TABLE income_aurora" in rag.schema
    shown = set(rag.tables)
    # hints only link into tables the prompt shows
    linked = [h for h in rag.hints if " -> " in h and not h.startswith("profile")]
    assert linked and all(h.split(" -> ")[1].split(".")[0] in shown for h in linked)


def test_the_calendar_in_the_knowledge_base_resolves_relative_dates(wide):
    wide.retriever.store.upsert(
        RuleUKF.create(
            "Fiscal calendar",
            "The fiscal year starts in April; a month is published on the 10th.",
            kind="temporal",
            database="fin",
            content_resources={
                "calendar": {
                    "fiscal_year_start_month": 4,
                    "publish_day": 10,
                    "to_date_columns": {"month": "ptd_", "year": "ytd_"},
                }
            },
        )
    )
    wide.retriever.refresh()
    context = QueryContext(query_time="2024-07-08T09:00:00Z", user_profile={"currency": "JPY"})
    asked = wide.run("Aurora revenue last month?", context)
    assert "the newest period is '202406'" in asked.dates
    assert "'last month' is '202405'" in asked.dates
    # the question's own phrase, and the currency with the columns the shown tables have
    assert asked.resolved == (
        "\"last month\" is period '202405': use the ptd_ columns (that month alone). The "
        "question names no currency: amounts in the user's currency JPY: the *_jpy columns."
    )
    prompt = SqlGenerator(ScriptedLLM(["SELECT 1"]), "sqlite").messages(asked, context)
    text = prompt[-1]["content"]
    assert asked.dates in text
    assert text.endswith("Aurora revenue last month?\nResolved: " + asked.resolved)
    ytd = wide.run("Aurora revenue in euros so far this year?", context)
    assert "for its total use the ytd_ columns at period = '202406'" in ytd.resolved
    assert '"euros": amounts in EUR: the *_eur columns.' in ytd.resolved
    assert wide.run("Aurora revenue last month?").dates == ""  # no query time, no dates
    # a resolved time phrase is not also linked to the period values it names
    plain = wide.run("Aurora revenue for period 202405?")
    assert any(h.startswith('"period" -> ') for h in plain.hints), plain.hints  # no calendar
    dated = wide.run("Aurora revenue for period 202405?", context)
    assert not any(h.startswith('"period" -> ') for h in dated.hints), dated.hints
    assert "\"period 202405\" is period '202405'" in dated.resolved


def test_a_database_shown_whole_is_in_one_order_whatever_the_question(wide):
    """Every question on a small database starts with the same prompt (cached prefix)."""
    catalog = wide.catalog
    small = ["regions", "fx_rates", "departments"]
    first = catalog.slice(small, budget_tokens=10_000)
    again = catalog.slice(list(reversed(catalog.tables)), budget_tokens=10_000)
    everything = catalog.slice(list(catalog.tables), budget_tokens=10_000)
    assert first.full == small  # a part of the database: most relevant first
    assert first.text.index("fx_rates") > first.text.index("regions")
    assert again.full == list(reversed(catalog.tables))  # relevance order kept for the caller
    assert again.text == everything.text  # ... but the whole database is written in one order
    positions = [everything.text.index(f"CREATE TABLE {name} ") for name in catalog.tables]
    assert positions == sorted(positions)
    # past the budget the slice follows relevance again
    tight = catalog.slice(list(reversed(catalog.tables)), budget_tokens=400)
    assert tight.text.startswith(f"CREATE TABLE {tight.full[0]} ")


def test_the_overview_is_the_same_for_every_question_and_writes_families_once(wide):
    catalog = wide.catalog
    incomes = [f"income_{b}" for b in BRANDS]
    assert catalog.families()["income_aurora"] == incomes
    overview = catalog.overview(budget_tokens=600, listing_tokens=200)
    assert overview.text.count("CREATE TABLE income_") == 1
    assert f"-- 8 tables with the same columns: {', '.join(incomes)}\n" in overview.text
    assert set(overview.full + overview.listed + overview.named) == set(catalog.tables)

    wide.options.stable_schema = True
    aurora = wide.run("Aurora revenue in Europe in JPY for 202403?")
    titan = wide.run(
        "Titan cost in Asia for 202405?", QueryContext(user_profile={"department": "Helix"})
    )
    assert aurora.schema == titan.schema  # a cached prompt prefix for every question
    assert "income_titan" in titan.tables  # each family member counts as shown ...
    assert any("income_titan." in hint for hint in titan.hints)  # ... so its links are kept
    wide.options.stable_schema = False
    assert wide.run("Titan cost in Asia for 202405?").schema != titan.schema
