"""Question typing: the rules on each type, the LLM only when they are unsure, garbage
falling back to the rules."""

from __future__ import annotations

import json

import pytest

from agents.analysis.typing import classify_question, rule_typing
from agents.llm.base import LLMOutputError
from tests.agents.scripted import ScriptedLLM


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("How many singers do we have?", "lookup"),
        ("List the names of all stadiums.", "lookup"),
        ("Why did Aurora's margin fall in Q3?", "diagnostic"),
        ("What were the main drivers of the drop in revenue?", "diagnostic"),
        ("Forecast EMEA sales for the next quarter", "predictive"),
        ("What will revenue be next year?", "predictive"),
        ("Where should we cut discounts?", "prescriptive"),
        ("Recommend which channel to invest in", "prescriptive"),
        ("Show the trend of monthly sales by region", "descriptive"),
        ("Give me a breakdown of orders by country", "descriptive"),
    ],
)
def test_the_rules_type_each_kind_of_question(question, expected):
    llm = ScriptedLLM([AssertionError("the rules are sure: no LLM call")])
    typed = classify_question(question, llm)
    assert typed.type == expected and typed.by == "rules"
    assert llm.calls == []


@pytest.mark.parametrize(
    "question",
    [
        "If the trend continues, how much revenue will Zephyr make in Europe in the month "
        "after the latest data?",
        "In which month of next year should we expect Helix's revenue to peak?",
    ],
)
def test_a_decisive_phrase_makes_a_forecast_whatever_else_the_question_says(question):
    # "trend" is a descriptive cue and "should" a prescriptive one: without the decisive
    # phrase the rules were unsure, and the 1.5B called the first one descriptive
    llm = ScriptedLLM([AssertionError("a decisive cue: no LLM call")])
    typed = classify_question(question, llm)
    assert (typed.type, typed.by) == ("predictive", "rules")
    assert typed.reason.startswith("decisive cue")


def test_the_llm_decides_when_the_rules_are_unsure():
    # no cue at all: the rules are unsure
    assert rule_typing("Aurora margin Q3 situation")[1] is False
    llm = ScriptedLLM([json.dumps({"type": "diagnostic", "reason": "asks for causes"})])
    typed = classify_question("Aurora margin Q3 situation", llm)
    assert (typed.type, typed.by, typed.reason) == ("diagnostic", "llm", "asks for causes")
    assert llm.calls[0][1]["json_schema"]["properties"]["type"]["enum"][0] == "lookup"


def test_cues_of_several_types_ask_the_llm():
    typed, sure = rule_typing("Why will sales drop next quarter?")
    assert not sure and typed.type == "predictive"
    llm = ScriptedLLM([json.dumps({"type": "predictive", "reason": "a forecast"})])
    assert classify_question("Why will sales drop next quarter?", llm).by == "llm"


@pytest.mark.parametrize(
    "reply",
    [
        json.dumps({"type": "astrology", "reason": "?"}),
        json.dumps(["diagnostic"]),
        LLMOutputError("model output is not JSON", "blah"),
    ],
    ids=["unknown-type", "not-an-object", "not-json"],
)
def test_garbage_from_the_llm_falls_back_to_the_rules_with_a_note(reply):
    typed = classify_question("Aurora margin Q3 situation", ScriptedLLM([reply]))
    assert typed.by == "rules" and typed.type == "lookup"
    assert typed.notes and "rules decided" in typed.notes[0]


def test_without_an_llm_the_rules_decide():
    typed = classify_question("Why will sales drop next quarter?")
    assert typed.by == "rules" and typed.type == "predictive"
