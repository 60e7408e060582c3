"""The drivers of a change, made on SQLite and a real PostgreSQL from the query the chain wrote for
the measure in one period: the period before (or a year earlier) read from the data, the
breakdowns where the change concentrates chosen, and the planted segment found by the
period-change tool."""

from __future__ import annotations

import sqlite3

import pytest

from agents.analysis.compute import compute_facts
from agents.analysis.driver_base import driver_base, year_earlier
from agents.analysis.drivers import driver_evidence, wants_drivers
from agents.analysis.models import Evidence
from kb.target.database import Database
from tests.agents.analysis.drivers_support import MARGIN_SQL, evidence_of, income_tables


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, tmp_path):
    """The income table on SQLite and on a real PostgreSQL: the drivers' SQL runs on both."""
    yield from income_tables(request, tmp_path)


def _drive(database: Database, sql: str, question: str) -> Evidence | None:
    """The drivers made from ``sql``'s evidence for ``question``."""
    ran = [evidence_of(database, sql)]
    return driver_evidence(ran, question, database, evidence_id="q4", max_rows=500, seconds=30)


def _find(database: Database, sql: str, question: str) -> Evidence:
    found = _drive(database, sql, question)
    assert found is not None
    return found


def test_the_change_is_made_from_the_period_query_and_the_driver_found(database):
    found = _find(database, MARGIN_SQL, "Why did Aurora's gross margin fall in FY2025 Q2?")
    assert found.id == "q4" and found.purpose == "the segments that drove the change"
    assert found.columns[0] == "period" and found.columns[-1] == "gross_margin"
    assert set(found.columns[1:-1]) == {"region_name", "model_name"}  # the concentrated two
    assert {row[0] for row in found.rows} == {"FY2025 Q1", "FY2025 Q2"}  # the quarter before
    assert "caliber = 'A'" in found.sql  # the question's filter kept
    assert "q1's query" in found.repair
    facts, _ = compute_facts([found], "diagnostic")
    changes = [f for f in facts if f.tool == "period_change" and f.dimension]
    top = {f.dimension: f.contributions[0].segment for f in changes}
    assert top["region_name"] == "EUR name" and top["model_name"] == "AU5"
    assert top["region_name / model_name"] == "EUR name / AU5"
    assert all(f.change < 0 for f in changes)  # the margin fell


def test_a_breakdown_the_question_names_comes_first(database):
    # the change does not concentrate on a channel: chosen only because it was named
    found = _find(database, MARGIN_SQL, "Which channel drove the fall in FY2025 Q2?")
    assert found.columns[1] == "channel" and len(found.columns) == 4
    both = _find(database, MARGIN_SQL, "Which channels and customers drove the fall?")
    assert set(both.columns[1:3]) == {"channel", "customer_code"}


def test_a_year_earlier_is_compared_when_the_question_says_so(database):
    question = "What explains the weaker gross margin in FY2025 Q2 compared with a year earlier?"
    found = _find(database, MARGIN_SQL, question)
    assert {row[0] for row in found.rows} == {"FY2024 Q2", "FY2025 Q2"}


def test_the_querys_own_breakdown_is_kept_and_one_more_chosen(database):
    sql = MARGIN_SQL.replace("SELECT ", "SELECT region_name, ") + " GROUP BY region_name"
    found = _find(database, sql, "Why did the margin fall in FY2025 Q2?")
    assert found.columns[:3] == ["period", "region_name", "model_name"]


def test_the_first_quarter_is_compared_with_the_last_of_the_year_before(database):
    sql = MARGIN_SQL.replace("'Q2'", "'Q1'")
    found = _find(database, sql, "Why did the margin change in FY2025 Q1?")
    assert [r[0] for r in found.rows][:1] == ["FY2024 Q2"]
    assert {row[0] for row in found.rows} == {"FY2024 Q2", "FY2025 Q1"}


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT SUM(amount) FROM income WHERE fiscal_year BETWEEN 'FY2024' AND 'FY2025'",
        "SELECT SUM(amount) FROM income WHERE region_code = 'EUR'",  # no period named
        "SELECT region_name FROM income WHERE fiscal_year = 'FY2025'",  # no aggregate
        "SELECT SUM(a.amount) FROM income a JOIN income b ON a.item = b.item "
        "WHERE a.fiscal_year = 'FY2025'",  # a join
        "SELECT SUM(amount) OVER () FROM income WHERE fiscal_year = 'FY2025'",
        "not sql at all (",
    ],
)
def test_a_query_that_names_no_single_period_of_one_table_is_not_used(sql):
    assert driver_base(sql, "sqlite") is None


def test_no_evidence_when_the_data_holds_no_earlier_period(database):
    sql = MARGIN_SQL.replace("'Q2'", "'Q1'").replace("'FY2025'", "'FY2024'")
    assert _drive(database, sql, "Why did it fall in FY2024 Q1?") is None


def test_failed_or_empty_evidence_is_skipped_for_the_next_usable_query(database):
    failed = Evidence(id="q1", question="q", sql=MARGIN_SQL, error="the query did not run")
    usable = evidence_of(database, MARGIN_SQL, id="q2")
    found = driver_evidence(
        [failed, usable], "Why did it fall?", database, evidence_id="q3", max_rows=500, seconds=30
    )
    assert found is not None and "q2's query" in found.repair


def test_the_query_naming_the_question_s_period_is_chosen_over_an_earlier_one(database):
    # the chain's first query read one month (a year-to-date figure), its second the quarter
    month = MARGIN_SQL.replace(
        "T1.fiscal_quarter = 'Q2' AND T1.fiscal_year = 'FY2025'", "T1.period = '202410'"
    )
    ran = [evidence_of(database, month, id="q1"), evidence_of(database, MARGIN_SQL, id="q2")]
    question = "Why did Aurora's gross margin fall in FY2025 Q2?"
    found = driver_evidence(ran, question, database, evidence_id="q3", max_rows=500, seconds=30)
    assert found is not None and "q2's query" in found.repair
    assert {row[0] for row in found.rows} == {"FY2025 Q1", "FY2025 Q2"}
    # a question naming no period keeps the chain's order
    found = driver_evidence(
        ran, "Why did it fall?", database, evidence_id="q3", max_rows=500, seconds=30
    )
    assert found is not None and "q1's query" in found.repair


def test_grain_orders_the_period_columns_year_first():
    base = driver_base(MARGIN_SQL, "sqlite")
    assert base is not None
    assert [c.name for c, _ in base.period] == ["fiscal_year", "fiscal_quarter"]
    assert [v for _, v in base.period] == ["FY2025", "Q2"]
    assert len(base.kept) == 1 and base.breakdowns == []


def test_a_period_with_no_rows_is_narrowed_to_the_values_the_question_names(database):
    # FY2025 Q1's first month beside FY2025 Q2: no rows, as the 1.5B wrote for "FY2025 Q2"
    sql = MARGIN_SQL + " AND period = '202407'"
    found = _find(database, sql, "Why did the margin fall in FY2025 Q2 (July-September 2024)?")
    assert {row[0] for row in found.rows} == {"FY2025 Q1", "FY2025 Q2"}
    # no value named: the period is kept as written, and holds no rows
    assert _drive(database, sql, "Why did the margin fall last quarter?") is None


def test_the_query_s_own_breakdowns_are_two_at_most_and_none_is_scored(database):
    sql = MARGIN_SQL.replace("SELECT ", "SELECT channel, model_name, region_name, ")
    found = _find(database, sql + " GROUP BY channel, model_name, region_name", "Why?")
    assert found.columns == ["period", "channel", "model_name", "gross_margin"]
    assert "the query's own breakdowns" in found.repair


@pytest.fixture()
def odd_database(tmp_path):
    """A breakdown named by a reserved word (``group``), and months by number and by name."""
    path = tmp_path / "odd.sqlite"
    with sqlite3.connect(path) as connection:
        connection.execute('CREATE TABLE t (period TEXT, month_name TEXT, "group" TEXT, v REAL)')
        months = [("2025-01", "January"), ("2025-02", "February"), ("2025-03", "March")]
        rows = [
            (period, name, group, 10.0 if (name, group) == ("March", "g2") else 50.0)
            for period, name in months
            for group in ("g1", "g2", "g3")
        ]
        connection.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", rows)
    db = Database(f"sqlite:///{path}")
    yield db
    db.close()


TOTAL = "SELECT SUM(v) AS total FROM t WHERE "


def test_a_reserved_word_breakdown_is_quoted(odd_database):
    found = _find(odd_database, TOTAL + "period = '2025-03'", "Why did v fall in March 2025?")
    assert '"group"' in found.sql
    assert found.columns == ["period", "group", "total"]
    assert {row[0] for row in found.rows} == {"2025-02", "2025-03"}
    facts, _ = compute_facts([found], "diagnostic")
    assert facts[0].contributions[0].segment == "g2"


def test_month_names_are_not_ordered_as_text(odd_database):
    """ "January" < "March" as text, and so is "February": no period before is read from
    month names (rather than a comparison with the wrong month)."""
    assert _drive(odd_database, TOTAL + "month_name = 'March'", "Why did v fall in March?") is None


def test_year_earlier_shifts_the_year_in_each_value():
    assert year_earlier(["FY2025", "Q2"]) == ["FY2024", "Q2"]
    assert year_earlier(["202502"]) == ["202402"]
    assert year_earlier([2025, 7]) == [2024, 7]
    assert year_earlier(["Q2"]) is None


@pytest.mark.parametrize(
    ("kind", "question", "wanted"),
    [
        ("diagnostic", "What explains the churn?", True),
        ("descriptive", "How did the margin develop by region in Q2?", True),
        ("descriptive", "List the regions by revenue", False),
        ("predictive", "Why will sales fall next month?", False),
    ],
)
def test_which_questions_look_for_drivers(kind, question, wanted):
    assert wants_drivers(kind, question) is wanted
