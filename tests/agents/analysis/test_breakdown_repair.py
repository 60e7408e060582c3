"""A breakdown the model cut to its top rows with LIMIT is read whole for the analysis (SQLite and
a real PostgreSQL), so the outlier tool sees the whole distribution."""

from __future__ import annotations

import json

import pytest

from agents.analysis.breakdown_repair import unlimited, whole_breakdown
from agents.analysis.run import AnalysisOptions, Analyst
from agents.answer import Answer
from tests.agents.analysis.chain_answers import answer_of
from tests.agents.analysis.income_table import evidence_of, income_database
from tests.agents.scripted import ScriptedLLM

TOP = "SELECT item, SUM(amount) AS total FROM income GROUP BY item ORDER BY total DESC"


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, tmp_path):
    yield from income_database(request, tmp_path, request.param)


def test_the_limit_and_offset_of_a_grouped_query_are_taken_out():
    assert unlimited(TOP + " LIMIT 1 OFFSET 1", "sqlite") == TOP
    assert unlimited(TOP + " LIMIT 1", "postgres") == TOP


@pytest.mark.parametrize(
    "sql",
    [
        TOP,  # no limit
        "SELECT item, amount FROM income ORDER BY amount DESC LIMIT 1",  # not grouped
        "SELECT item FROM (SELECT item FROM income LIMIT 2) AS t GROUP BY item",  # inner limit
        "DELETE FROM income",
    ],
)
def test_anything_else_is_left_alone(sql):
    assert unlimited(sql, "sqlite") is None


def test_the_top_row_is_read_with_the_rest_of_the_breakdown(database):
    top = evidence_of(database, "q1", TOP + " LIMIT 1")
    assert top.rows == [["Revenue", 14256.0]]
    whole = whole_breakdown(top, database, max_rows=100, timeout_s=5)
    assert [row[0] for row in whole.rows] == ["Revenue", "Cost", "Promo"]
    assert whole.sql == TOP and whole.repair.startswith("the LIMIT taken out")
    # one as whole as it gets, one cut at the row cap, or a top asked for is kept
    all_rows = evidence_of(database, "q1", TOP + " LIMIT 10")
    assert whole_breakdown(all_rows, database, max_rows=100, timeout_s=5) is all_rows
    assert whole_breakdown(top, database, max_rows=2, timeout_s=5) is top
    asked = top.model_copy(update={"question": "The top 1 item by amount"})
    assert whole_breakdown(asked, database, max_rows=100, timeout_s=5) is asked
    busiest = top.model_copy(update={"question": "the two busiest items"})
    assert whole_breakdown(busiest, database, max_rows=100, timeout_s=5) is busiest


def _plan_and_narrative(messages, options) -> str:
    if "Split the analyst's question" in messages[-1]["content"]:
        return json.dumps({"steps": [{"question": "Amount per item", "purpose": "spread"}]})
    return json.dumps({"short_answer": "Revenue leads.", "findings": [], "caveats": []})


@pytest.mark.parametrize("baseline", [False, True])
def test_the_analyst_reads_the_whole_breakdown(database, baseline):
    def chain(question: str) -> Answer:
        return answer_of(database, question, TOP + " LIMIT 1")

    analyst = Analyst(
        chain,
        ScriptedLLM([_plan_and_narrative]),
        AnalysisOptions(max_steps=2, max_seconds=60),
        database=database,
    )
    question = "Describe the distribution of amounts across items"
    schema = "CREATE TABLE income (period TEXT, region TEXT, item TEXT, amount REAL)"
    analysis = (
        analyst.analyze_one_sql(question)
        if baseline
        else analyst.analyze(question, schema_text=schema)
    )
    assert [e.row_count for e in analysis.evidence] == [3] * len(analysis.evidence)
    assert any(f["tool"] == "outliers" for f in analysis.facts)
