"""The drivers of a change, made on a real SQLite database from the query the chain wrote for
the measure in one period: the period before (or a year earlier) read from the data, the
breakdowns where the change concentrates chosen, and the planted segment found by the
period-change tool."""

from __future__ import annotations

import json
import sqlite3

import pytest
from sqlalchemy import create_engine, text

from agents.analysis.compute import compute_facts
from agents.analysis.driver_base import driver_base, year_earlier
from agents.analysis.drivers import driver_evidence, wants_drivers
from agents.analysis.facts import Contribution, PeriodChange
from agents.analysis.models import Evidence
from agents.analysis.narrative import with_driver
from agents.analysis.run import AnalysisOptions, Analyst
from agents.answer import Answer
from kb.target.database import Database
from tests.agents.scripted import ScriptedLLM

REGIONS = ["EUR", "NA", "APAC"]
MODELS = ["AU3", "AU5", "AU7"]
QUARTERS = [("FY2024", "Q1"), ("FY2024", "Q2"), ("FY2025", "Q1"), ("FY2025", "Q2")]
# what a small model writes for "Aurora's gross margin in FY2025 Q2"
MARGIN_SQL = (
    "SELECT (SUM(CASE WHEN item = 'Revenue' THEN amount ELSE 0 END) - "
    "SUM(CASE WHEN item = 'Cost' THEN amount ELSE 0 END)) / "
    "SUM(CASE WHEN item = 'Revenue' THEN amount ELSE 0 END) AS gross_margin "
    "FROM income AS T1 WHERE T1.fiscal_quarter = 'Q2' AND T1.fiscal_year = 'FY2025' "
    "AND caliber = 'A'"
)


COLUMNS = (
    "fiscal_year TEXT, fiscal_quarter TEXT, caliber TEXT, region_code TEXT, region_name TEXT, "
    "model_name TEXT, channel TEXT, customer_code TEXT, item TEXT, amount {real}, units INTEGER"
)


def _rows() -> list[tuple]:
    """Income by quarter, region, model and channel; in FY2025 Q2 the cost of AU5 in EUR
    jumps (its margin collapses) while every other segment keeps a 25 % margin. Caliber B
    rows (filtered out by the query) would hide it."""
    rows = []
    for year, quarter in QUARTERS:
        for r, region in enumerate(REGIONS):
            for model in MODELS:
                for channel in ("retail", "fleet"):
                    revenue = 100.0 + 10 * r
                    cost = revenue * 0.75
                    if (year, quarter, region, model) == ("FY2025", "Q2", "EUR", "AU5"):
                        cost = revenue * 1.1
                    for caliber, scale in (("A", 1.0), ("B", 3.0)):
                        common = (year, quarter, caliber, region, f"{region} name", model)
                        common += (channel, f"C{r}{channel}")
                        rows.append((*common, "Revenue", revenue * scale, 5))
                        spent = cost if caliber == "A" else revenue * 0.75 * scale
                        rows.append((*common, "Cost", spent, 5))
    return rows


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, tmp_path):
    """The income table on SQLite and on a real PostgreSQL: the drivers' SQL runs on both."""
    if request.param == "sqlite":
        path = tmp_path / "income.sqlite"
        with sqlite3.connect(path) as connection:
            connection.execute(f"CREATE TABLE income ({COLUMNS.format(real='REAL')})")
            connection.executemany(f"INSERT INTO income VALUES ({', '.join('?' * 11)})", _rows())
        url = f"sqlite:///{path}"
    else:
        url = request.getfixturevalue("fresh_pg_database")
        engine = create_engine(url)
        with engine.begin() as connection:
            connection.execute(
                text(f"CREATE TABLE income ({COLUMNS.format(real='DOUBLE PRECISION')})")
            )
            names = [f"c{i}" for i in range(11)]
            insert = f"INSERT INTO income VALUES ({', '.join(':' + n for n in names)})"
            connection.execute(
                text(insert), [dict(zip(names, row, strict=True)) for row in _rows()]
            )
        engine.dispose()
    db = Database(url)
    yield db
    db.close()


def _evidence(database: Database, sql: str, id: str = "q1") -> Evidence:
    ran = database.execute(sql)
    assert ran.ok, ran.error
    return Evidence(
        id=id,
        question="Aurora's gross margin in FY2025 Q2",
        sql=sql,
        columns=list(ran.columns),
        rows=[list(r) for r in ran.rows],
        row_count=ran.row_count,
    )


def _find(database: Database, sql: str, question: str) -> Evidence:
    found = driver_evidence(
        [_evidence(database, sql)],
        question,
        database,
        evidence_id="q4",
        max_rows=500,
        seconds=30,
    )
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


def test_a_breakdown_the_question_or_the_plan_names_comes_first(database):
    # the change does not concentrate on a channel: chosen only because it was named
    found = _find(database, MARGIN_SQL, "Which channel drove the fall in FY2025 Q2?")
    assert found.columns[1] == "channel" and len(found.columns) == 4
    hinted = driver_evidence(
        [_evidence(database, MARGIN_SQL)],
        "Why did it fall?",
        database,
        evidence_id="q2",
        max_rows=500,
        seconds=30,
        hints=["Channel", "customer code"],
    )
    assert hinted is not None and set(hinted.columns[1:3]) == {"channel", "customer_code"}


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
    found = driver_evidence(
        [_evidence(database, sql)],
        "Why did it fall in FY2024 Q1?",
        database,
        evidence_id="q2",
        max_rows=500,
        seconds=30,
    )
    assert found is None


def test_failed_or_empty_evidence_is_skipped_for_the_next_usable_query(database):
    failed = Evidence(id="q1", question="q", sql=MARGIN_SQL, error="the query did not run")
    usable = _evidence(database, MARGIN_SQL, id="q2")
    found = driver_evidence(
        [failed, usable], "Why did it fall?", database, evidence_id="q3", max_rows=500, seconds=30
    )
    assert found is not None and "q2's query" in found.repair


def test_grain_orders_the_period_columns_year_first():
    base = driver_base(MARGIN_SQL, "sqlite")
    assert base is not None
    assert [c.name for c, _ in base.period] == ["fiscal_year", "fiscal_quarter"]
    assert [v for _, v in base.period] == ["FY2025", "Q2"]
    assert len(base.kept) == 1 and base.breakdowns == []


def test_a_period_value_the_question_does_not_name_is_dropped_when_others_are_named():
    sql = MARGIN_SQL + " AND period = '202501'"  # a month outside FY2025 Q2: no rows
    kept = driver_base(sql, "sqlite", "Why did the margin fall in FY2025 Q2 (Jul-Sep 2024)?")
    assert kept is not None and [c.name for c, _ in kept.period] == [
        "fiscal_year",
        "fiscal_quarter",
    ]
    resolved = driver_base(sql, "sqlite", "Why did the margin fall last quarter?")  # none named
    assert resolved is not None and len(resolved.period) == 3


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


def _answer(database: Database, question: str, sql: str) -> Answer:
    ran = database.execute(sql)
    return Answer(
        id="a",
        question=question,
        database="income",
        sql=sql,
        columns=ran.columns,
        rows=[list(r) for r in ran.rows],
        row_count=ran.row_count,
        executed=True,
    )


PROMPTS: list[str] = []


def _reply(messages, options) -> str:
    """The scripted model: a one-step plan, then a narrative with no finding."""
    PROMPTS.append(messages[-1]["content"])
    if "Split the analyst's question" in messages[-1]["content"]:
        return json.dumps({"steps": [{"question": "Gross margin by quarter", "purpose": "x"}]})
    return json.dumps({"short_answer": "It fell.", "findings": [], "caveats": []})


def test_the_analyst_adds_the_drivers_to_a_diagnostic_analysis(database):
    """Every sub-question is answered with the margin of one quarter (what a small model
    writes); the analyst makes the comparison by segment on the database, and the change
    tool names the planted segment. An analyst with no database gets no such evidence."""

    def chain(question: str) -> Answer:
        return _answer(database, question, MARGIN_SQL)

    options = AnalysisOptions(max_steps=2, max_seconds=60)
    analyst = Analyst(chain, ScriptedLLM([_reply]), options, database=database)
    analysis = analyst.analyze("Why did Aurora's gross margin fall in FY2025 Q2?", schema_text="")
    assert analysis.type == "diagnostic"
    drivers = analysis.evidence[-1]
    assert drivers.id == "q3" and drivers.purpose == "the segments that drove the change"
    combined = analysis.facts[0]  # the pair of breakdowns first: what "why" asks for
    assert combined["dimension"] == "region_name / model_name" and combined["evidence"] == "q3"
    assert [f.get("dimension") for f in analysis.facts[1:3]] == ["region_name", "model_name"]
    assert combined["contributions"][0]["segment"] == "EUR name / AU5"
    assert analysis.sql_calls == 2  # the database queries are no chain calls
    # the scripted "It fell." names no segment: led by the one the tools found
    assert analysis.short_answer.startswith("EUR name and AU5 moved most: gross_margin 0.25 in ")
    assert analysis.short_answer.endswith("It fell.")
    narrative = PROMPTS[-1]  # told to start from the drivers
    assert "which segments drove it: gross_margin went from" in narrative
    assert "EUR name / AU5" in narrative.split("which segments drove it")[1].split("\n")[0]

    plain = Analyst(chain, ScriptedLLM([_reply]), options)
    analysis = plain.analyze("Why did Aurora's gross margin fall in FY2025 Q2?", schema_text="")
    assert all(e.purpose != "the segments that drove the change" for e in analysis.evidence)
    assert "which segments drove it" not in PROMPTS[-1]


def test_a_short_answer_naming_the_driver_is_kept_and_one_naming_part_of_it_is_led():
    change = PeriodChange(
        measure="gross_margin",
        previous_period="FY2025 Q1",
        last_period="FY2025 Q2",
        previous=0.1609,
        last=0.1472,
        change=-0.01372,
        pct_change=-8.527,
        dimension="region_name / model_name",
        contributions=[Contribution("Europe / Aurora 5", 0.2362, -0.0255, -0.2617, None)],
    )
    named = "Europe's Aurora 5 margin fell from 0.2362 to -0.0255."
    assert with_driver(named, change) == named
    assert with_driver("The Europe region fell by 0.2617.", change) == (
        "Europe and Aurora 5 moved most: gross_margin 0.2362 in FY2025 Q1, -0.0255 in "
        "FY2025 Q2 (-0.2617). The Europe region fell by 0.2617."
    )
    assert with_driver("Anything.", None) == "Anything."
