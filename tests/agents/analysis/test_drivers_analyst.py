"""The analyst with the drivers step: the comparison by segment added to a diagnostic
analysis, its facts first, the narrative told and led by them, and a failing step that
leaves a caveat instead of ending the analysis."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from agents.analysis.facts import Contribution, PeriodChange
from agents.analysis.narrative import with_driver
from agents.analysis.run import AnalysisOptions, Analyst
from agents.answer import Answer
from tests.agents.analysis.chain_answers import answer_of
from tests.agents.analysis.drivers_support import MARGIN_SQL, income_tables
from tests.agents.scripted import ScriptedLLM


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, tmp_path):
    """The income table on SQLite and on a real PostgreSQL: the drivers' SQL runs on both."""
    yield from income_tables(request, tmp_path)


def test_a_failing_drivers_step_leaves_a_caveat_and_the_analysis_goes_on(database, monkeypatch):
    def chain(question: str) -> Answer:
        return answer_of(database, question, MARGIN_SQL)

    def broken(name: str):
        raise RuntimeError(f"no table {name}")

    monkeypatch.setattr(database, "table_info", broken)
    options = AnalysisOptions(max_steps=2, max_seconds=60)
    analyst = Analyst(chain, ScriptedLLM([_reply]), options, database=database)
    analysis = analyst.analyze("Why did Aurora's gross margin fall in FY2025 Q2?", schema_text="")
    assert analysis.short_answer and len(analysis.evidence) == 2
    assert any("drivers" in c and "no table income" in c for c in analysis.caveats)


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
        return answer_of(database, question, MARGIN_SQL)

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
    # the total of a margin by segment is their mean, not the whole's margin: said so
    assert "which segments drove it: the mean gross_margin of up to 9 rows a period" in narrative
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
    na = replace(change, contributions=[Contribution("NA", 0.25, 0.2, -0.05, None)])
    assert with_driver("The finance margin fell.", na).startswith("NA moved most")  # a word
