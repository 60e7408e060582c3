"""The default filter a rule carries is added to a query that forgot it, without a model:
on the SQL, in the refine agent on a real SQLite database, and through the whole chain
with the rule switched on by the user's profile."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from agents.answer import Candidate
from agents.pipeline import AskOptions, ModelTier, Pipeline
from agents.rag.agent import RagContext
from agents.sql.default_filters import (
    DefaultFilter,
    filter_of,
    filters_for,
    filters_of,
    with_default_filters,
)
from agents.sql.refine import RefineOptions, Refiner
from indices.embeddings import HashingEmbedder
from indices.evidence import Evidence, EvidenceItem
from indices.hits import Hit
from indices.index_set import IndexSet
from kb.target.database import Database
from tests.agents.scripted import ScriptedLLM, sql_reply
from ukf import MetricUKF, QueryContext, RuleUKF

CALIBER_B = DefaultFilter("caliber", "B", "Default caliber B from the profile")
CURRENCY = DefaultFilter("currency", "EUR", "Default currency for EUR users")
COLUMNS = {
    "income": {"period", "caliber", "amount"},
    "pnl": {"period", "caliber", "currency", "amount"},
    "regions": {"code", "name"},
}


def _added(sql: str) -> str | None:
    filtered = with_default_filters(sql, [CALIBER_B, CURRENCY], COLUMNS, "sqlite")
    return None if filtered is None else filtered.sql


def test_the_filter_is_added_to_each_select_reading_a_table_with_the_column():
    assert _added("SELECT SUM(amount) FROM income WHERE period = '202407'") == (
        "SELECT SUM(amount) FROM income WHERE period = '202407' AND income.caliber = 'B'"
    )
    # an OR keeps its meaning; each table of a join gets its own, by its alias
    assert _added("SELECT SUM(amount) FROM income WHERE period = '1' OR period = '2'") == (
        "SELECT SUM(amount) FROM income WHERE (period = '1' OR period = '2') "
        "AND income.caliber = 'B'"
    )
    joined = _added(
        "SELECT SUM(i.amount) FROM income AS i JOIN pnl AS p ON i.period = p.period "
        "JOIN regions AS r ON r.code = p.period"
    )
    assert joined is not None
    assert "i.caliber = 'B'" in joined and "p.caliber = 'B'" in joined
    assert "p.currency = 'EUR'" in joined and "r." not in joined.split("WHERE")[1]
    # a CTE, a derived table and a subquery filter inside, where the table is read
    assert _added("WITH m AS (SELECT period, amount FROM income) SELECT SUM(amount) FROM m") == (
        "WITH m AS (SELECT period, amount FROM income WHERE income.caliber = 'B') "
        "SELECT SUM(amount) FROM m"
    )
    nested = _added("SELECT period FROM income WHERE period IN (SELECT MAX(period) FROM income)")
    assert nested is not None and nested.count("income.caliber = 'B'") == 2


@pytest.mark.parametrize(
    "sql",
    [
        # the query says which caliber, or compares them: the model's reading stands
        "SELECT SUM(amount) FROM income WHERE caliber = 'A'",
        "SELECT caliber, SUM(amount) FROM income GROUP BY caliber",
        # no table with the columns, no table at all, and text that is no SQL
        "SELECT name FROM regions",
        "SELECT 1",
        "SELECT FROM WHERE (",
        "",
    ],
)
def test_nothing_is_added_where_the_query_mentions_the_column_or_reads_no_such_table(sql):
    assert with_default_filters(sql, [CALIBER_B], COLUMNS, "sqlite") is None


def test_a_numeric_value_is_a_number_and_the_note_names_the_rule():
    filtered = with_default_filters(
        "SELECT amount FROM income", [DefaultFilter("period", 202407, "Newest")], COLUMNS, "sqlite"
    )
    assert filtered is not None
    assert filtered.sql == "SELECT amount FROM income WHERE income.period = 202407"
    assert filtered.notes == ["default filter added: period = 202407 (Newest)"]


def _rule(name: str, resources: dict, **fields) -> RuleUKF:
    return RuleUKF.create(name, name, kind="intent", database="fin", **fields,
                          content_resources=resources)  # fmt: skip


def test_the_rules_filters_a_triggered_rule_first_one_per_column():
    general = _rule("Always one caliber", {"default_filter": {"column": "caliber", "value": "A"}})
    profile = _rule(
        "Default caliber B from the profile",
        {"default_filter": {"column": "Caliber", "value": "B"}},
        triggers={"user_profile_match": {"caliber": "B"}},
    )
    mined = _rule("default currency EUR", {"preference": {"column": "currency", "value": "EUR"}})
    plain = _rule("Fiscal calendar", {"calendar": {"fiscal_year_start_month": 4}})
    found = filters_of([general, plain, profile, mined])
    assert [(f.column, f.value, f.rule) for f in found] == [
        ("Caliber", "B", "Default caliber B from the profile"),
        ("currency", "EUR", "default currency EUR"),  # the general caliber rule lost to B
    ]
    assert filters_of([general]) == [DefaultFilter("caliber", "A", "Always one caliber")]


def _metric(name: str, value: str) -> MetricUKF:
    spec = {"column": "item", "value": value, "unless": ["item_code"]}
    return MetricUKF.create(name, f"SUM(amount) WHERE item = '{value}'", database="fin",
                            content_resources={"default_filter": spec})  # fmt: skip


def test_a_metric_s_rows_are_filtered_only_when_the_question_names_it_alone():
    revenue, cost = _metric("Revenue", "Revenue"), _metric("Cost of sales", "Cost")
    assert filters_of([revenue, cost]) == []  # retrieved, not named
    assert filters_of([revenue, cost], {revenue.id}) == [
        DefaultFilter("item", "Revenue", "Revenue", unless=("item_code",))
    ]
    # "revenue minus cost of sales" needs both report items: neither is added
    assert filters_of([revenue, cost], {revenue.id, cost.id}) == []
    items = {"income": {"item", "item_code", "amount"}}
    only = filters_of([revenue], {revenue.id})
    added = with_default_filters("SELECT SUM(amount) FROM income", only, items, "sqlite")
    assert added is not None and added.sql.endswith("WHERE income.item = 'Revenue'")
    # a query that says which rows by another column it lists is left as written
    coded = "SELECT SUM(amount) FROM income WHERE item_code = 'REV_VEH'"
    assert with_default_filters(coded, only, items, "sqlite") is None


@pytest.mark.parametrize(
    "spec",
    [
        {"column": "caliber; DROP TABLE x", "value": "A"},  # no column name
        {"column": "caliber", "value": ["A"]},  # no literal
        {"column": "caliber", "value": True},
        {"value": "A"},
        {"column": "caliber", "value": "A", "unless": "caliber_code"},  # no list
        "caliber = 'A'",
    ],
)
def test_a_malformed_default_filter_is_ignored(spec):
    assert filter_of(_rule("bad", {"default_filter": spec})) is None


@pytest.fixture
def ledger(tmp_path: Path):
    path = tmp_path / "ledger.sqlite"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE income (period TEXT, caliber TEXT, amount REAL)")
        rows = [("202407", "A", 10.0), ("202407", "B", 12.0), ("202408", "A", 11.0)]
        connection.executemany("INSERT INTO income VALUES (?, ?, ?)", rows)
    database = Database(f"sqlite:///{path}")
    yield database
    database.close()


def test_the_refine_agent_runs_the_query_with_the_filter_and_says_so(ledger):
    refiner = Refiner(ledger, None, options=RefineOptions(default_filters=(CALIBER_B,)))
    written = "-- Reasoning: July\nSELECT SUM(amount) FROM income WHERE period = '202407'"
    ran = refiner.refine(Candidate(sql=written), [])
    assert ran.ok and ran.results.rows == [(12.0,)]
    assert ran.sql == (
        "-- Reasoning: July\n"
        "SELECT SUM(amount) FROM income WHERE period = '202407' AND income.caliber = 'B'"
    )
    assert ran.notes == ["default filter added: caliber = 'B' (Default caliber B from the profile)"]
    # without filters, or with the caliber named, the query runs as written
    plain = Refiner(ledger, None).refine(Candidate(sql="SELECT SUM(amount) FROM income"), [])
    assert plain.results.rows == [(33.0,)] and plain.notes == []
    named = refiner.refine(Candidate(sql="SELECT SUM(amount) FROM income WHERE caliber = 'A'"), [])
    assert named.results.rows == [(21.0,)] and named.notes == []


def test_the_chain_adds_the_filter_the_user_s_profile_switches_on(concert):
    """A rule of the knowledge base, switched on by the asker's profile, filters the singers
    of the asker's country; the model's query does not; the answer's SQL does."""
    store, database, _ = concert
    store.upsert(
        RuleUKF.create(
            "Singers of the asker's country",
            "Users of the French office see French singers unless they name another country.",
            kind="intent",
            database="concert_singer",
            triggers={"user_profile_match": {"office": "FR"}},
            content_resources={"default_filter": {"column": "Country", "value": "France"}},
        )
    )
    retriever = IndexSet.build(store, HashingEmbedder()).retriever()
    llm = ScriptedLLM([sql_reply("SELECT name FROM singer")])
    pipeline = Pipeline(
        store=store,
        retriever=retriever,
        database=database,
        database_name="concert_singer",
        tiers=[ModelTier("scripted", llm)],
    )
    french = pipeline.ask("Names of the singers?", QueryContext(user_profile={"office": "FR"}))
    assert french.sql == "SELECT name FROM singer WHERE singer.Country = 'France'"
    assert french.row_count == 4
    assert "Singers of the asker's country" in {k.name for k in french.knowledge}
    anyone = pipeline.ask("Names of the singers?", QueryContext(user_profile={"office": "US"}))
    assert anyone.sql == "SELECT name FROM singer" and anyone.row_count == 6
    # the SQL alone, not run: the filter is there too
    sql_only = pipeline.ask(
        "Names of the singers?",
        QueryContext(user_profile={"office": "FR"}),
        AskOptions(execute=False),
    )
    assert sql_only.sql == french.sql and not sql_only.executed


@pytest.mark.parametrize(
    ("sql", "dialect", "expected"),
    [
        # the side of a LEFT JOIN that may be missing gets it in the ON, not the WHERE
        (
            "SELECT r.name, SUM(i.amount) FROM regions AS r LEFT JOIN income AS i "
            "ON i.period = r.code GROUP BY r.name",
            "sqlite",
            "SELECT r.name, SUM(i.amount) FROM regions AS r LEFT JOIN income AS i "
            "ON i.period = r.code AND i.caliber = 'B' GROUP BY r.name",
        ),
        # a comment that quotes the statement stays a comment
        (
            "-- Plan: SELECT SUM(amount) FROM income\nSELECT SUM(amount) FROM income",
            "sqlite",
            "-- Plan: SELECT SUM(amount) FROM income\n"
            "SELECT SUM(amount) FROM income WHERE income.caliber = 'B'",
        ),
        # PostgreSQL: the quoted table stays quoted, the column as the database spells it
        (
            'SELECT SUM("Amount") FROM "Ledger"',
            "postgres",
            'SELECT SUM("Amount") FROM "Ledger" WHERE "Ledger"."Caliber" = \'B\'',
        ),
        # a WHERE with an OR and ANDs: kept as it reads, the filter ANDed flat after it
        (
            "SELECT 1 FROM income WHERE (period = '1' AND amount > 2) OR period = '3'",
            "sqlite",
            "SELECT 1 FROM income WHERE ((period = '1' AND amount > 2) OR period = '3') "
            "AND income.caliber = 'B'",
        ),
    ],
)
def test_outer_joins_comments_and_quoted_names_are_kept_right(sql, dialect, expected):
    columns = {**COLUMNS, "Ledger": {"Caliber", "Amount"}}
    filtered = with_default_filters(sql, [CALIBER_B], columns, dialect)
    assert filtered is not None and filtered.sql == expected


def test_a_right_join_and_a_table_the_filter_is_not_for_are_left_alone():
    right = "SELECT 1 FROM regions AS r RIGHT JOIN income AS i ON i.period = r.code"
    assert with_default_filters(right, [CALIBER_B], COLUMNS, "sqlite") is None
    narrow = DefaultFilter("currency", "EUR", "Default currency", tables=("pnl",))
    columns = {**COLUMNS, "fx_rates": {"currency", "rate"}}
    assert with_default_filters("SELECT rate FROM fx_rates", [narrow], columns, "sqlite") is None
    added = with_default_filters("SELECT SUM(amount) FROM pnl", [narrow], columns, "sqlite")
    assert added is not None and added.sql.endswith("WHERE pnl.currency = 'EUR'")


def test_when_the_rewritten_query_fails_what_the_model_wrote_runs(ledger):
    refiner = Refiner(ledger, None, options=RefineOptions(default_filters=(CALIBER_B,)))
    first = refiner.execute(Candidate(sql="SELECT SUM(amount) FROM income"))
    assert first.results.rows == [(12.0,)]  # the schema is read once, here
    # the column is renamed after that: the filter names a column that is gone
    with sqlite3.connect(ledger.url.removeprefix("sqlite:///")) as connection:
        connection.execute("ALTER TABLE income RENAME COLUMN caliber TO view")
    ran = refiner.execute(Candidate(sql="SELECT SUM(amount) FROM income"))
    assert ran.sql == "SELECT SUM(amount) FROM income" and ran.results.rows == [(33.0,)]
    assert len(ran.notes) == 1 and ran.notes[0].startswith("not kept (default filter added: ")
    assert "the query so rewritten failed" in ran.notes[0]
    # a query sqlglot cannot write back as SQLite reads it is run as written
    recursive = (
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 2) "
        "SELECT SUM(amount) FROM income, r"
    )
    assert with_default_filters(recursive, [CALIBER_B], COLUMNS, "sqlite") is None


def test_on_postgresql_the_filter_names_a_mixed_case_column_as_the_database_does(
    fresh_pg_database,
):
    """PostgreSQL folds unquoted names to lower case: a table and column created quoted in
    mixed case are filtered quoted, and the query runs."""
    engine = create_engine(fresh_pg_database)
    with engine.begin() as connection:
        connection.execute(
            text('CREATE TABLE "Ledger" ("Period" TEXT, "Caliber" TEXT, amount REAL)')
        )
        connection.execute(
            text("INSERT INTO \"Ledger\" VALUES ('202407', 'A', 10), ('202407', 'B', 12)")
        )
    engine.dispose()
    database = Database(fresh_pg_database)
    try:
        refiner = Refiner(database, None, options=RefineOptions(default_filters=(CALIBER_B,)))
        ran = refiner.execute(Candidate(sql='SELECT SUM(amount) FROM "Ledger"'))
        assert ran.sql == 'SELECT SUM(amount) FROM "Ledger" WHERE "Ledger"."Caliber" = \'B\''
        assert ran.ok and ran.results.rows == [(12.0,)]
    finally:
        database.close()


def test_a_rule_the_prompt_had_no_room_for_still_filters():
    """The evidence's token budget drops what does not fit the prompt; a rule the retriever
    admitted applies all the same, and a metric only when the question names it."""
    general = _rule("Always one caliber", {"default_filter": {"column": "caliber", "value": "A"}})
    revenue = _metric("Revenue", "Revenue")
    named = EvidenceItem(revenue, [Hit(revenue.id, 1.0, "span", span=(0, 7))])
    evidence = Evidence(question="Revenue in July?", budget=10)
    evidence.items.append(named)
    evidence.dropped.append(EvidenceItem(general, [Hit(general.id, 0.1, "facet")]))
    rag = RagContext("Revenue in July?", "fin", evidence, schema="")
    assert [(f.column, f.value) for f in filters_for(rag)] == [
        ("caliber", "A"),
        ("item", "Revenue"),
    ]
    unnamed = Evidence(question="Cost in July?", budget=10)
    unnamed.dropped.append(EvidenceItem(revenue, [Hit(revenue.id, 0.1, "facet")]))
    assert filters_for(RagContext("Cost in July?", "fin", unnamed, schema="")) == ()
