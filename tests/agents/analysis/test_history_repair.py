"""A forecast's history made whole on a real database (SQLite and PostgreSQL): the range the
model cut taken out, the direct query's filters it forgot put back where the data allows."""

from __future__ import annotations

import json

import pytest

from agents.analysis.history_repair import (
    has_series,
    series_of_direct,
    widened,
    widened_history,
    with_direct_filters,
)
from agents.analysis.run import AnalysisOptions, Analyst
from agents.answer import Answer
from agents.sql.default_filters import DefaultFilter, with_default_filters
from kb.target.sql_guard import sqlglot_dialect
from tests.agents.analysis.chain_answers import answer_of
from tests.agents.analysis.income_table import evidence_of, income_database
from tests.agents.scripted import ScriptedLLM

REVENUE = "SELECT period, SUM(amount) AS revenue FROM income WHERE region = 'EUR' "


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, tmp_path):
    yield from income_database(request, tmp_path, request.param)


def test_the_bounds_on_the_series_range_and_its_limit_are_taken_out():
    cut = REVENUE + "AND period BETWEEN '202507' AND '202512' GROUP BY period ORDER BY period"
    assert widened(cut, "period", "sqlite") == (
        "SELECT period, SUM(amount) AS revenue FROM income WHERE region = 'EUR' "
        "GROUP BY period ORDER BY period"
    )
    last = (
        "SELECT period, SUM(amount) FROM income WHERE period >= '202506' AND period LIKE "
        "'2025%' GROUP BY period ORDER BY period DESC LIMIT 3"
    )
    assert widened(last, "period", "sqlite") == (
        "SELECT period, SUM(amount) FROM income GROUP BY period ORDER BY period"
    )


@pytest.mark.parametrize(
    "sql",
    [
        REVENUE + "GROUP BY period",  # no bound, no limit: nothing to widen
        REVENUE + "AND period >= '202507'",  # no series (not grouped by the period)
        REVENUE + "AND region >= 'A' GROUP BY period",  # a bound on another column only
        "SELECT i.period, SUM(i.amount) FROM income AS i JOIN regions AS r ON i.region = r.code"
        " WHERE i.period > '202506' GROUP BY i.period",  # a join
        "DELETE FROM income",
    ],
)
def test_nothing_is_widened_where_the_rule_does_not_apply(sql):
    assert widened(sql, "period", "sqlite") is None


def test_a_cut_history_is_widened_on_the_database(database):
    cut = evidence_of(
        database,
        "q2",
        REVENUE + "AND item = 'Revenue' AND period > '202509' GROUP BY period ORDER BY period",
    )
    assert cut.row_count == 3
    wide = widened_history(cut, "period", database, max_rows=100, timeout_s=5)
    assert wide.row_count == 12 and wide.rows[0] == ["202501", 156.0]
    assert wide.repair == "the bounds on period taken out: every period the data holds"
    whole = evidence_of(database, "q2", REVENUE + "AND item = 'Revenue' GROUP BY period")
    assert widened_history(whole, "period", database, max_rows=100, timeout_s=5) is whole


def test_the_direct_query_s_filters_are_added_where_every_period_is_kept(database):
    # the 1.5B's direct query: the future month, the report item, and a country it read
    # into "US dollars" (no row in Europe); the history it wrote adds up every item
    direct = evidence_of(
        database,
        "q1",
        "SELECT SUM(amount) FROM income WHERE period = '202601' AND item = 'Revenue' "
        "AND region = 'USA' AND item IN ('Revenue', 'Promo')",
    )
    loose = evidence_of(database, "q2", REVENUE + "GROUP BY period ORDER BY period")
    assert loose.rows[0] == ["202501", 236.0]
    made = with_direct_filters(loose, direct, "period", database, max_rows=100, timeout_s=5)
    assert made.row_count == 12 and made.rows[0] == ["202501", 156.0]
    assert "item = 'Revenue'" in (made.sql or "") and "USA" not in (made.sql or "")
    assert made.repair == (
        "q1's filters added, every period kept: item = 'Revenue', item IN ('Revenue', 'Promo')"
    )


def test_a_filter_that_picks_some_periods_is_left_out(database):
    direct = evidence_of(
        database, "q1", "SELECT SUM(amount) FROM income WHERE item = 'Promo' AND period = '202503'"
    )
    loose = evidence_of(database, "q2", REVENUE + "GROUP BY period ORDER BY period")
    kept = with_direct_filters(loose, direct, "period", database, max_rows=100, timeout_s=5)
    assert kept is loose


@pytest.mark.parametrize(
    "direct_sql",
    [
        "SELECT SUM(amount) FROM other WHERE item = 'Revenue'",  # another table
        "SELECT SUM(amount) FROM income WHERE region = 'EUR'",  # nothing the history lacks
        # a column the history filters already, however written
        "SELECT SUM(amount) FROM income WHERE income.region = 'USA'",
        "SELECT 1 AS x WHERE 1 = 1",  # no table
    ],
)
def test_no_filter_is_added_from_another_table_or_when_none_is_new(database, direct_sql):
    direct = evidence_of(database, "q1", "SELECT 1").model_copy(update={"sql": direct_sql})
    loose = evidence_of(database, "q2", REVENUE + "GROUP BY period ORDER BY period")
    same = with_direct_filters(loose, direct, "period", database, max_rows=100, timeout_s=5)
    assert same is loose
    failed = direct.model_copy(update={"error": "no such table"})
    same = with_direct_filters(loose, failed, "period", database, max_rows=100, timeout_s=5)
    assert same is loose


def _plan_and_narrative(messages, options) -> str:
    """The scripted model: a one-step plan, then a narrative with no finding."""
    if "Split the analyst's question" in messages[-1]["content"]:
        return json.dumps({"steps": [{"question": "Revenue in 2025", "purpose": "level"}]})
    return json.dumps({"short_answer": "About 200.", "findings": [], "caveats": []})


def test_the_analyst_forecasts_from_the_whole_history_with_the_question_s_filters(database):
    """The direct query filters the report item; the model's history adds up every item over
    its last three months: the analyst fits the forecast to twelve months of revenue."""
    direct = "SELECT SUM(amount) FROM income WHERE period = '202601' AND item = 'Revenue'"
    cut = REVENUE + "AND period > '202509' GROUP BY period ORDER BY period"

    def chain(question: str) -> Answer:
        return answer_of(database, question, cut if "as history" in question else direct)

    options = AnalysisOptions(max_steps=3, max_seconds=60)
    analyst = Analyst(chain, ScriptedLLM([_plan_and_narrative]), options, database=database)
    analysis = analyst.analyze(
        "What will monthly revenue in Europe be in January 2026?",
        schema_text="CREATE TABLE income (\n  period TEXT,\n  region TEXT,\n  item TEXT,\n"
        "  amount REAL\n)",
    )
    history = next(e for e in analysis.evidence if "as history" in e.question)
    assert history.row_count == 12 and history.rows[-1] == ["202512", 222.0]
    assert history.repair == (
        "the bounds on period taken out: every period the data holds; "
        "q1's filters added, every period kept: item = 'Revenue'"
    )
    forecast = next(f for f in analysis.facts if f["tool"] == "forecast")
    assert forecast["evidence"] == history.id


def test_a_history_the_default_filters_rewrote_is_still_widened(database):
    """The chain's default filters AND a condition after the model's WHERE (sqlglot writes
    ``(a AND b) AND c``): the history's bounds are still found and taken out."""
    dialect = sqlglot_dialect(database.dialect)
    revenue = DefaultFilter("item", "Revenue", "Revenue")
    written = REVENUE + "AND period > '202509' GROUP BY period ORDER BY period"
    columns = {"income": ["period", "region", "item", "amount"]}
    filtered = with_default_filters(written, [revenue], columns, dialect)
    assert filtered is not None
    cut = evidence_of(database, "q2", filtered.sql)
    wide = widened_history(cut, "period", database, max_rows=100, timeout_s=5)
    assert wide.row_count == 12 and wide.rows[0] == ["202501", 156.0]
    assert "income.item = 'Revenue'" in (wide.sql or "") and "202509" not in (wide.sql or "")
    # a series cut by the row cap is no history: the newest periods would be missing
    assert widened_history(cut, "period", database, max_rows=5, timeout_s=5) is cut


def test_a_history_with_no_measure_is_made_from_the_direct_grouped_query(database):
    """Asked "in which month will revenue peak", the model answered directly with the top month
    of a grouped query and, as history, with the latest month alone (no measure)."""
    direct = evidence_of(
        database,
        "q1",
        REVENUE + "AND item = 'Revenue' GROUP BY period ORDER BY revenue DESC LIMIT 1",
    )
    latest = evidence_of(database, "q2", "SELECT MAX(period) AS period FROM income")
    assert not has_series(latest) and direct.row_count == 1
    made = series_of_direct(latest, direct, "period", database, max_rows=100, timeout_s=5)
    assert made.row_count == 12 and has_series(made)
    assert [row[0] for row in made.rows] == [f"2025{m:02d}" for m in range(1, 13)]
    assert made.repair == "the series made from q1's query, in period order, whole"
    # a step that has its series, or a direct query not grouped by the period, is kept
    whole = evidence_of(database, "q2", REVENUE + "GROUP BY period")
    assert series_of_direct(whole, direct, "period", database, max_rows=100, timeout_s=5) is whole
    flat = evidence_of(database, "q1", "SELECT SUM(amount) FROM income WHERE period = '202601'")
    assert series_of_direct(latest, flat, "period", database, max_rows=100, timeout_s=5) is latest
