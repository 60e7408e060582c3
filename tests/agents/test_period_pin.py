"""The question's period where the model wrote another (agents.sql.period_pin): only a query
that filters the calendar's period column on one other period, for a question whose time
words settle one period."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path

import pytest

from agents.pipeline import ModelTier, Pipeline
from agents.rag.calendar import ReportingCalendar
from agents.rag.question_facts import PeriodPin, period_pin
from agents.rag.time_phrases import find_time_windows
from agents.sql.period_pin import with_pinned_period
from indices.embeddings import HashingEmbedder
from indices.index_set import IndexSet
from kb.profile.profiler import ProfileOptions, profile_database
from kb.store import KnowledgeStore
from kb.target.database import Database
from tests.agents.scripted import ScriptedLLM, sql_reply
from ukf import QueryContext, RuleUKF

CALENDAR = ReportingCalendar(fiscal_year_start_month=4, publish_day=10, period_column="period")
OCTOBER_4 = datetime.fromisoformat("2024-10-04T08:15:00+00:00")  # newest period: 202409
PIN = PeriodPin("period", "202409", "the current fiscal quarter to date")


def _pin(question: str, calendar: ReportingCalendar | None = CALENDAR) -> PeriodPin | None:
    windows = find_time_windows(question, calendar, OCTOBER_4) if calendar else []
    return period_pin(question, calendar, windows)


def test_one_time_window_pins_its_period():
    pin = _pin("What share of our units sold for the current fiscal quarter to date were EVs?")
    assert pin == PeriodPin("period", "202409", "the current fiscal quarter")
    assert _pin("Zephyr Gale revenue in Q1 FY2025?") == PeriodPin("period", "202406", "Q1 FY2025")
    assert _pin("Revenue in FY2023?") == PeriodPin("period", "202303", "FY2023")  # the year's end
    # a comparison base is no window: the question's one window still pins
    assert _pin("Revenue YoY this quarter vs last year?") == PeriodPin(
        "period", "202409", "this quarter"
    )


@pytest.mark.parametrize(
    "question",
    [
        "Revenue this quarter and last quarter?",  # two windows: which is which is the model's
        "Show revenue month by month so far this year.",  # a series of periods
        "Top models by revenue?",  # no time words: the prompt's default period
    ],
)
def test_no_pin_where_the_time_words_do_not_settle_one_period(question):
    assert _pin(question) is None


def test_no_pin_without_a_period_column_or_a_calendar():
    no_column = ReportingCalendar(fiscal_year_start_month=4, publish_day=10)
    assert _pin("Revenue this quarter?", no_column) is None
    assert _pin("Revenue this quarter?", None) is None


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        (
            "SELECT SUM(qtd_qty) FROM income_titan WHERE period = '202503' AND caliber = 'B'",
            "SELECT SUM(qtd_qty) FROM income_titan WHERE period = '202409' AND caliber = 'B'",
        ),
        (  # qualified, written the other way round, in any case
            "SELECT SUM(i.qtd_amt) FROM income AS i WHERE '202406' = i.PERIOD",
            "SELECT SUM(i.qtd_amt) FROM income AS i WHERE '202409' = i.PERIOD",
        ),
        (  # one period in both halves of a ratio
            "SELECT (SELECT SUM(ptd_amt) FROM pl WHERE period = '202504') / "
            "(SELECT SUM(ptd_amt) FROM budget WHERE period = '202504') AS bcr",
            "SELECT (SELECT SUM(ptd_amt) FROM pl WHERE period = '202409') / "
            "(SELECT SUM(ptd_amt) FROM budget WHERE period = '202409') AS bcr",
        ),
        (  # a number where the text was meant
            "SELECT SUM(qtd_amt) FROM income WHERE period = 202503",
            "SELECT SUM(qtd_amt) FROM income WHERE period = '202409'",
        ),
    ],
)
def test_a_query_on_one_other_period_reads_the_question_s(sql, expected):
    pinned = with_pinned_period(sql, PIN, "sqlite")
    assert pinned is not None and pinned.sql == expected
    assert pinned.notes[0].startswith("period '202409' for '20")
    assert '"the current fiscal quarter to date" is period' in pinned.notes[0]


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT SUM(qtd_amt) FROM income WHERE period = '202409'",  # already the question's
        # two periods: month over month, a year against the one before
        "SELECT SUM(CASE WHEN period = '202409' THEN ptd_amt END) - "
        "SUM(CASE WHEN period = '202408' THEN ptd_amt END) FROM income",
        "SELECT SUM(ptd_amt) FROM income WHERE period = '202503' OR period = '202502'",
        # the period read another way than by equality
        "SELECT SUM(ptd_amt) FROM income WHERE period IN ('202503')",
        "SELECT SUM(ptd_amt) FROM income WHERE period BETWEEN '202404' AND '202409'",
        "SELECT SUM(ptd_amt) FROM income WHERE period >= '202404' AND period = '202503'",
        "SELECT SUM(ptd_amt) FROM income AS a JOIN budget AS b ON a.period = b.period "
        "WHERE a.period = '202503'",
        "SELECT period, SUM(ptd_amt) FROM income GROUP BY period",  # no filter on it
        "SELECT SUM(ptd_amt) FROM income WHERE fiscal_year = 'FY2025'",  # another column
        "SELEC nonsense FROM",  # cannot be read: left as written
        "",
    ],
)
def test_other_queries_are_left_as_written(sql):
    assert with_pinned_period(sql, PIN, "sqlite") is None


def test_a_calendar_names_its_period_column_as_text():
    assert ReportingCalendar.from_facts([{"period_column": "period"}]) == ReportingCalendar(
        period_column="period"
    )
    with pytest.raises(ValueError, match="period_column"):
        ReportingCalendar(period_column="  ")


@pytest.fixture
def ledger(tmp_path: Path):
    path = tmp_path / "fin.sqlite"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE income (period TEXT, qtd_amt REAL)")
        connection.executemany(
            "INSERT INTO income VALUES (?, ?)", [("202406", 6.0), ("202409", 9.0)]
        )
    store = KnowledgeStore(f"sqlite:///{tmp_path / 'knowledge.db'}")
    database = Database(f"sqlite:///{path}")
    profile_database(database, store, database_name="fin", options=ProfileOptions(progress=False))
    calendar = {"fiscal_year_start_month": 4, "publish_day": 10, "period_column": "period"}
    store.upsert(
        RuleUKF.create(
            "Fiscal calendar",
            "The fiscal year starts in April; a month is published on the 10th.",
            kind="temporal",
            database="fin",
            content_resources={"calendar": calendar},
        )
    )
    yield store, database
    database.close()
    store.close()


def test_the_chain_reads_the_period_the_question_names(ledger):
    store, database = ledger
    written = "SELECT SUM(qtd_amt) FROM income WHERE period = '202406'"
    llm = ScriptedLLM([sql_reply(written)] * 3)
    pipeline = Pipeline(
        store=store,
        retriever=IndexSet.build(store, HashingEmbedder()).retriever(),
        database=database,
        database_name="fin",
        tiers=[ModelTier("scripted", llm)],
    )
    october = QueryContext(query_time="2024-10-04T08:15:00Z")
    asked = pipeline.ask("Revenue for the current fiscal quarter to date?", october)
    assert asked.sql == "SELECT SUM(qtd_amt) FROM income WHERE period = '202409'"
    assert asked.rows == [[9.0]]
    # two windows: the model's periods stand; no query time: no window at all
    both = pipeline.ask("Revenue this quarter against last quarter?", october)
    assert both.sql == written and both.rows == [[6.0]]
    undated = pipeline.ask("Revenue for the current fiscal quarter to date?")
    assert undated.sql == written
