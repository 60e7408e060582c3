"""The plan: from the LLM, validated and bounded; a fallback plan for garbage; a forecast
refused on a schema with no time column."""

from __future__ import annotations

import json

import pytest

from agents.analysis.plan import (
    AnalysisRefused,
    history_step,
    names_in,
    plan_analysis,
    time_columns,
    with_names,
)
from agents.analysis.typing import QuestionTyping
from agents.llm.base import LLMOutputError
from tests.agents.scripted import ScriptedLLM

SALES = """CREATE TABLE sales (
  order_date DATE,
  region TEXT,
  model TEXT,
  revenue REAL,
  margin REAL
)"""
SINGERS = """CREATE TABLE singer (
  Singer_ID INTEGER PRIMARY KEY,
  Name TEXT,
  Country TEXT,
  Age INTEGER
)"""
DIAGNOSTIC = QuestionTyping(type="diagnostic")
PREDICTIVE = QuestionTyping(type="predictive")


def steps(n: int) -> str:
    return json.dumps(
        {
            "steps": [
                {"question": f"Total margin by month and region {i}?", "purpose": f"p{i}"}
                for i in range(n)
            ]
        }
    )


def asked(*questions: str) -> str:
    """The model's plan reply asking ``questions``."""
    return json.dumps({"steps": [{"question": q} for q in questions]})


def test_time_columns_are_read_from_the_schema():
    assert time_columns(SALES) == ["order_date"]
    assert time_columns(SINGERS) == []


def test_the_plan_is_bounded_in_steps_and_numbered():
    llm = ScriptedLLM([steps(9)])
    plan = plan_analysis("Why did margin fall?", DIAGNOSTIC, SALES, llm, max_steps=3)
    assert plan.by == "llm" and [s.id for s in plan.steps] == ["q1", "q2", "q3"]
    # the question itself first, then the model's steps
    assert plan.steps[0].question == "Why did margin fall?"
    assert [s.purpose for s in plan.steps[1:]] == ["p0", "p1"]
    assert "past the limit of 3" in plan.notes[-1]
    assert llm.calls[0][1]["json_schema"]["properties"]["steps"]["maxItems"] == 2
    assert "order_date" in llm.calls[0][0][0]["content"]


def test_the_plan_is_bounded_in_time():
    llm = ScriptedLLM([steps(2)], delay_s=0.5)
    plan = plan_analysis("Why did margin fall?", DIAGNOSTIC, SALES, llm, timeout_s=0.1)
    assert plan.by == "fallback" and "no plan" in plan.notes[0]
    assert llm.calls[0][1]["timeout"] == 0.1


def test_invalid_and_repeated_steps_are_dropped():
    reply = {
        "steps": [
            {"question": "Margin by month?", "purpose": "trend", "breakdowns": "region"},
            {"question": "margin by month?"},
            {"purpose": "no question"},
            "not a step",
        ]
    }
    plan = plan_analysis("Why?", DIAGNOSTIC, SALES, ScriptedLLM([json.dumps(reply)]))
    assert [s.question for s in plan.steps] == ["Why?", "Margin by month?"]
    assert plan.steps[1].breakdowns == ["region"] and len(plan.notes) == 3


@pytest.mark.parametrize(
    "reply",
    [json.dumps({"steps": []}), json.dumps({"plan": "x"}), LLMOutputError("not JSON", "x")],
    ids=["empty", "no-steps", "garbage"],
)
def test_a_malformed_plan_gives_the_fallback_plan(reply):
    question = "Why did the margin fall in Q3?"
    plan = plan_analysis(question, DIAGNOSTIC, SALES, ScriptedLLM([reply]))
    assert plan.by == "fallback"
    assert plan.steps[0].question == question
    assert "by month" in plan.steps[1].question and plan.steps[1].id == "q2"


def test_one_step_is_the_question_alone_without_asking_the_model():
    llm = ScriptedLLM([AssertionError("no plan is asked for")])
    plan = plan_analysis("Why did margin fall?", DIAGNOSTIC, SALES, llm, max_steps=1)
    assert [s.question for s in plan.steps] == ["Why did margin fall?"] and llm.calls == []


def test_the_fallback_plan_has_no_time_series_without_a_time_column():
    plan = plan_analysis(
        "Why are singers old?", DIAGNOSTIC, SINGERS, ScriptedLLM(["garbage"]), max_steps=4
    )
    assert [s.id for s in plan.steps] == ["q1"]


def test_a_forecast_on_a_database_with_no_time_column_is_refused():
    llm = ScriptedLLM([AssertionError("no plan is asked for")])
    with pytest.raises(AnalysisRefused) as refused:
        plan_analysis("What will the average age be next year?", PREDICTIVE, SINGERS, llm)
    assert "time column" in refused.value.reason and llm.calls == []


def test_a_forecast_plan_always_asks_for_the_history_without_the_future_period():
    """The model's plan for a forecast asks for the future month itself (no rows); the plan
    gets the measure's monthly history second, the model's last step dropped for it."""
    future = asked(
        "What is the revenue in Europe in January 2026?", "What is the revenue by region?"
    )
    question = "What will the monthly revenue in Europe be in January 2026?"
    plan = plan_analysis(question, PREDICTIVE, SALES, ScriptedLLM([future]), max_steps=3)
    assert [s.id for s in plan.steps] == ["q1", "q2", "q3"]
    history = plan.steps[1]
    assert history.question.startswith("What will the monthly revenue in Europe be, as history")
    assert "2026" not in history.question and "order_date" in history.period
    assert plan.steps[2].question == "What is the revenue in Europe in January 2026?"
    for wording in (
        "Forecast revenue for next month.",
        "How much revenue in the month after the latest data?",
    ):
        fallback = plan_analysis(wording, PREDICTIVE, SALES, ScriptedLLM(["garbage"]), max_steps=2)
        assert "next month" not in fallback.steps[1].question
        assert "after the latest data" not in fallback.steps[1].question
        assert fallback.steps[1].question.endswith("in time order")


def test_a_sub_question_naming_none_of_the_question_s_names_gets_the_first():
    """The planner wrote "gross profit for each region in FY2025 Q2" for a question on
    Aurora's; the chain answered it from another brand's table."""
    reply = asked(
        "What was the gross profit for each region in FY2025 Q2?", "Titan gross profit by model"
    )
    question = "Which model drove the drop in Aurora's gross profit in Europe, against Titan?"
    plan = plan_analysis(question, DIAGNOSTIC, SALES, ScriptedLLM([reply]), max_steps=3)
    assert [s.question for s in plan.steps] == [
        question,
        # the first name only: "Europe" would narrow "each region" to one
        "What was the gross profit for each region in FY2025 Q2 for Aurora?",
        "Titan gross profit by model",  # names one of them (the comparison): as written
    ]


@pytest.mark.parametrize(
    ("question", "names"),
    [
        ("Why did Aurora revenue fall in June?", ["Aurora"]),  # a month is no name
        ("Where should we cut discounts for Titan in Europe?", ["Titan", "Europe"]),
        ("What will EMEA sales be in FY2026 Q1?", []),  # capitals and periods are not names
        ("Revenue by month", []),  # the first word is capitalised as any first word
        ("Find trends in the Hardware category", ["Hardware"]),
        ("What is the Year-Over-Year growth of Aurora?", ["Aurora"]),  # hyphenated: no name
        ("Why Did Gross Profit Fall In Q2?", []),  # Title Case: capitals say nothing
    ],
)
def test_the_names_of_a_question(question, names):
    assert names_in(question) == names
    expected = f"Revenue by region for {names[0]}?" if names else "Revenue by region?"
    assert with_names("Revenue by region?", question) == expected


@pytest.mark.parametrize(
    ("question", "history"),
    [
        ("In which month of next year should we expect Helix's revenue to peak?",
         "Helix's revenue by month, as history"),
        ("When will Helix revenue peak next year?", "Helix revenue by month, as history"),
        ("Which month will sales be highest in 2026?", "sales by month, as history"),
        ("What will the monthly revenue in Europe be in January 2026?",
         "What will the monthly revenue in Europe be, as history"),
    ],
)  # fmt: skip
def test_the_history_of_a_peak_question_asks_for_the_measure_itself(question, history):
    """Asked as written ("in which month ... peak, as history"), the model selected the peak
    month alone: the history step asks for the measure by month."""
    assert history_step(question, "period").question.startswith(history)
