"""A series asked for and answered with one row: the forgotten GROUP BY put back, on a real
SQLite database, and the forecast made from the regrouped history."""

from __future__ import annotations

import json

import pytest

from agents.analysis.models import Evidence
from agents.analysis.run import AnalysisOptions, Analyst
from agents.analysis.series_repair import (
    filters,
    grouped_by_bare_columns,
    grouped_by_time,
    history_of,
    regrouped_series,
    series_from_direct,
)
from agents.answer import Answer
from tests.agents.analysis.chain_answers import answer_of
from tests.agents.analysis.income_table import evidence_of, income_database
from tests.agents.scripted import ScriptedLLM

# what the 1.5B wrote for "Zephyr's monthly revenue in Europe, as history: one row per month"
UNGROUPED = (
    "SELECT period, SUM(amount) AS revenue FROM income "
    "WHERE region = 'EUR' AND item = 'Revenue' ORDER BY period"
)
SCHEMA = "CREATE TABLE income (\n  period TEXT,\n  region TEXT,\n  item TEXT,\n  amount REAL\n)"
QUESTION = "What will monthly revenue in Europe be in January 2026?"


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, tmp_path):
    """The income table on SQLite and on a real PostgreSQL (whose sqlglot dialect is named
    ``postgres``, not SQLAlchemy's ``postgresql``: the repairs once raised there)."""
    yield from income_database(request, tmp_path, request.param)


@pytest.fixture()
def sqlite_database(request, tmp_path):
    """The income table on SQLite alone: a one-row "series" is SQLite's (PostgreSQL refuses
    a bare column beside an aggregate, so the chain's query fails there instead)."""
    yield from income_database(request, tmp_path, "sqlite")


def _reply(messages, options) -> str:
    """The scripted model: a one-step plan, then a narrative with no finding."""
    if "Split the analyst's question" in messages[-1]["content"]:
        return json.dumps({"steps": [{"question": "Revenue in 2025", "purpose": "level"}]})
    return json.dumps({"short_answer": "About 230.", "findings": [], "caveats": []})


def test_the_grouping_an_aggregate_beside_a_bare_column_meant_is_added():
    fixed = grouped_by_bare_columns(UNGROUPED, "sqlite")
    assert fixed is not None
    assert "GROUP BY period" in fixed and fixed.endswith("ORDER BY period")
    # no ORDER BY: the first bare column orders the series
    fixed = grouped_by_bare_columns("SELECT strftime('%Y-%m', d) AS m, COUNT(*) FROM t", "sqlite")
    assert fixed is not None and "GROUP BY STRFTIME('%Y-%m', d)" in fixed
    assert "ORDER BY STRFTIME('%Y-%m', d)" in fixed


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT period, SUM(amount) FROM income GROUP BY period",  # already grouped
        "SELECT period, amount FROM income",  # no aggregate
        "SELECT SUM(amount) FROM income",  # no bare column
        "SELECT period, SUM(amount) OVER (ORDER BY period) FROM income",  # a window
        "SELECT period, SUM(amount) FROM income UNION SELECT 'x', 1",  # not one SELECT
        "SELECT period, SUM(amount FROM",  # does not parse
    ],
)
def test_nothing_is_regrouped_where_the_rule_does_not_apply(sql):
    assert grouped_by_bare_columns(sql, "sqlite") is None


def test_a_one_row_series_is_regrouped_on_the_database(sqlite_database):
    database = sqlite_database
    one_row = database.execute(UNGROUPED)
    assert one_row.row_count == 1  # what SQLite does with the forgotten GROUP BY
    item = Evidence(
        id="q2",
        question="history",
        sql=UNGROUPED,
        columns=one_row.columns,
        rows=[list(r) for r in one_row.rows],
        row_count=1,
    )
    fixed = regrouped_series(item, database, max_rows=100, timeout_s=5)
    assert fixed.row_count == 12 and fixed.columns == ["period", "revenue"]
    assert fixed.rows[0] == ["202501", 156.0] and fixed.rows[-1] == ["202512", 222.0]
    assert fixed.repair and "grouped by" in fixed.repair and "GROUP BY" in (fixed.sql or "")
    # enough rows already, or nothing to regroup: the evidence is kept as it was
    many = item.model_copy(update={"row_count": 12})
    assert regrouped_series(many, database, max_rows=100, timeout_s=5) is many
    plain = item.model_copy(update={"sql": "SELECT SUM(amount) FROM income"})
    assert regrouped_series(plain, database, max_rows=100, timeout_s=5) is plain


def test_the_forecast_is_made_from_the_regrouped_history(sqlite_database):
    """The analyst's history step comes back with one row; regrouped, the forecast has 12
    months to fit, and the evidence says what was changed."""
    database = sqlite_database

    def chain(question: str) -> Answer:
        return answer_of(
            database, question, UNGROUPED if "as history" in question else "SELECT 1 AS x"
        )

    options = AnalysisOptions(max_steps=3, max_seconds=60)
    with_repair = Analyst(chain, ScriptedLLM([_reply]), options, database=database)
    analysis = with_repair.analyze(QUESTION, schema_text=SCHEMA)
    history = next(e for e in analysis.evidence if "as history" in e.question)
    assert history.row_count == 12 and history.repair
    assert any(f["tool"] == "forecast" and f["evidence"] == history.id for f in analysis.facts)

    without = Analyst(chain, ScriptedLLM([_reply]), options).analyze(QUESTION, schema_text=SCHEMA)
    history = next(e for e in without.evidence if "as history" in e.question)
    assert history.row_count == 1 and history.repair is None
    assert not any(f["tool"] == "forecast" for f in without.facts)


# the direct question's query with every filter, as the 1.5B wrote it for "if the trend
# continues, how much revenue will ... make in Europe in the month after the latest data?"
DIRECT = (
    "SELECT SUM(amount) AS revenue FROM income "
    "WHERE period = '202512' AND item = 'Revenue' AND region = 'EUR'"
)


def test_a_series_is_made_from_the_direct_query():
    fixed = series_from_direct(DIRECT, "period", "sqlite")
    assert fixed == (
        "SELECT period, SUM(amount) AS revenue FROM income "
        "WHERE item = 'Revenue' AND region = 'EUR' GROUP BY period ORDER BY period"
    )
    assert filters(fixed, "period", "sqlite") == 2
    # a bound on the period's range is no filter of the question's
    assert (
        filters("SELECT 1 FROM income WHERE period >= '2025' AND region = 'EU'", "period", "sqlite")
        == 1
    )


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT SUM(amount) FROM income WHERE item = 'Revenue'",  # no period filter
        "SELECT region, SUM(amount) FROM income WHERE period = '202512'",  # a bare column
        "SELECT SUM(amount) FROM income WHERE period = '202512' GROUP BY region",  # grouped
        "SELECT SUM(i.amount) FROM income AS i JOIN regions AS r ON i.region = r.code "
        "WHERE i.period = '202512'",  # a join
        "SELECT SUM(amount) FROM income WHERE period = '202512' OR period = '202511'",  # OR
    ],
)
def test_no_series_is_made_where_the_direct_query_is_not_one_filtered_aggregate(sql):
    assert series_from_direct(sql, "period", "sqlite") is None


def test_the_history_that_filters_more_is_kept(database):
    direct = evidence_of(database, "q1", DIRECT)
    # the model's history adds up every report item (Revenue and Cost): fewer filters
    loose = evidence_of(
        database,
        "q2",
        "SELECT period, SUM(amount) FROM income WHERE region = 'EUR' GROUP BY period",
    )
    made = history_of(loose, direct, "period", database, max_rows=100, timeout_s=5)
    assert made.row_count == 12 and made.rows[0] == ["202501", 156.0]
    assert made.repair and "q1" in made.repair
    # a history with every filter the direct query has: kept as the model wrote it
    tight = evidence_of(
        database,
        "q2",
        "SELECT period, SUM(amount) FROM income WHERE region = 'EUR' AND item = 'Revenue' "
        "GROUP BY period",
    )
    assert history_of(tight, direct, "period", database, max_rows=100, timeout_s=5) is tight
    # a direct query that failed gives nothing to make a history from
    failed = direct.model_copy(update={"error": "no such column"})
    assert history_of(loose, failed, "period", database, max_rows=100, timeout_s=5) is loose


def test_the_analyst_makes_the_history_from_its_direct_query(database):
    """The direct question's query filters revenue in Europe; the model's history adds up
    every report item: the analyst's history is made from the direct query instead."""
    loose = "SELECT period, SUM(amount) AS revenue FROM income WHERE region = 'EUR' GROUP BY period"

    def chain(question: str) -> Answer:
        return answer_of(database, question, loose if "as history" in question else DIRECT)

    options = AnalysisOptions(max_steps=3, max_seconds=60)
    analyst = Analyst(chain, ScriptedLLM([_reply]), options, database=database)
    analysis = analyst.analyze(QUESTION, schema_text=SCHEMA)
    history = next(e for e in analysis.evidence if "as history" in e.question)
    assert history.repair and "q1" in history.repair
    assert history.rows[0] == ["202501", 156.0] and history.row_count == 12


def test_a_sum_over_the_whole_range_is_grouped_by_the_step_s_time_column(sqlite_database):
    database = sqlite_database
    summed = (
        "SELECT SUM(amount) AS revenue FROM income WHERE region = 'EUR' "
        "AND item = 'Revenue' AND period BETWEEN '202501' AND '202512' ORDER BY period"
    )
    assert grouped_by_time(summed, "period", "sqlite") == (
        "SELECT period, SUM(amount) AS revenue FROM income WHERE region = 'EUR' "
        "AND item = 'Revenue' AND period BETWEEN '202501' AND '202512' "
        "GROUP BY period ORDER BY period"
    )
    assert grouped_by_time("SELECT period, SUM(amount) FROM income", "period", "sqlite") is None
    item = evidence_of(database, "q2", summed)
    assert item.row_count == 1
    # without the step's time column only bare columns are regrouped: none here
    assert regrouped_series(item, database, max_rows=100, timeout_s=5) is item
    fixed = regrouped_series(item, database, max_rows=100, timeout_s=5, time_column="period")
    assert fixed.row_count == 12 and fixed.rows[0] == ["202501", 156.0]
    assert fixed.repair and fixed.repair.endswith("grouped by period")
