"""``direct=False``: a goal no one query answers is not asked itself; only the model's
sub-questions are (the fallback plan still asks the goal: there is nothing else to ask)."""

from __future__ import annotations

import time

import pytest

from agents.analysis.plan import plan_analysis
from agents.analysis.run import AnalysisOptions, Analyst
from tests.agents.analysis.test_plan import DIAGNOSTIC, SALES, steps
from tests.agents.analysis.test_run import PLAN, QUESTION, SCHEMA, FakeChain, model
from tests.agents.scripted import ScriptedLLM

GOAL = "To determine how region influences margin, with the aim of better pricing"


def test_without_direct_only_the_models_steps_are_planned():
    llm = ScriptedLLM([steps(9)])
    plan = plan_analysis(GOAL, DIAGNOSTIC, SALES, llm, max_steps=3, direct=False)
    assert plan.by == "llm" and [s.id for s in plan.steps] == ["q1", "q2", "q3"]
    assert [s.purpose for s in plan.steps] == ["p0", "p1", "p2"]
    assert GOAL not in [s.question for s in plan.steps]
    assert llm.calls[0][1]["json_schema"]["properties"]["steps"]["maxItems"] == 3
    assert "at most 3 simpler sub-questions." in llm.calls[0][0][0]["content"]
    # one usable step is a plan; with the question asked too it would not be
    one = plan_analysis(GOAL, DIAGNOSTIC, SALES, ScriptedLLM([steps(1)]), direct=False)
    assert one.by == "llm" and len(one.steps) == 1


def test_without_direct_a_garbage_plan_still_asks_the_goal():
    plan = plan_analysis(GOAL, DIAGNOSTIC, SALES, ScriptedLLM(["nope"]), direct=False)
    assert plan.by == "fallback" and plan.steps[0].question == GOAL


def test_the_analyst_without_direct_asks_only_the_sub_questions():
    chain = FakeChain()
    options = AnalysisOptions(max_steps=2, direct=False)
    analysis = Analyst(chain, model([]), options).analyze(QUESTION, schema_text=SCHEMA)
    assert chain.asked == [PLAN[0]["question"], PLAN[1]["question"]]
    assert [e.id for e in analysis.evidence] == ["q1", "q2"] and analysis.sql_calls == 2


def test_the_narrative_keeps_its_reserve_of_the_budget():
    chain = FakeChain(delay_s=0.3)
    options = AnalysisOptions(max_steps=4, max_seconds=1.0, narrative_reserve_s=0.6)
    analysis = Analyst(chain, model([]), options).analyze(QUESTION, schema_text=SCHEMA)
    # 0.4 s for queries: two start (at 0 and 0.3 s), the others are left for the narrative
    assert analysis.sql_calls == 2 and len(chain.asked) == 2
    assert "last 0.6 s kept for the narrative" in analysis.evidence[2].error


def test_the_reserve_must_leave_part_of_the_budget():
    with pytest.raises(ValueError, match="narrative_reserve_s"):
        AnalysisOptions(max_seconds=10, narrative_reserve_s=10)


def test_the_plan_gets_its_share_of_the_budget_and_the_first_query_is_always_asked():
    """InsightBench with the 1.5B model: the plan took the whole 65 s budget and no query was
    asked (flag-2 to flag-5). The plan's call is bounded by ``plan_share`` of the budget, and
    the first sub-question is asked even when the budget is spent."""
    planned = model([])

    def slow_plan(messages, options):
        if "Split the analyst's question" in messages[-1]["content"]:
            time.sleep(0.5)  # past the whole budget
        return planned.replies[0](messages, options)

    llm = ScriptedLLM([slow_plan])
    chain = FakeChain()
    options = AnalysisOptions(max_steps=3, max_seconds=0.4, plan_share=0.5)
    analysis = Analyst(chain, llm, options).analyze(QUESTION, schema_text=SCHEMA)
    plan_call = next(o for m, o in llm.calls if "Split the analyst" in m[-1]["content"])
    assert plan_call["timeout"] == 5.0  # min(left, 0.2 s), never under MIN_CALL_S
    assert chain.asked == [QUESTION] and analysis.sql_calls == 1
    assert analysis.evidence[1].error.startswith("not asked")
    budget = AnalysisOptions(max_seconds=100, plan_share=0.25)
    llm = model([])
    Analyst(FakeChain(), llm, budget).analyze(QUESTION, schema_text=SCHEMA)
    plan_call = next(o for m, o in llm.calls if "Split the analyst" in m[-1]["content"])
    assert 20 < plan_call["timeout"] <= 25
    with pytest.raises(ValueError, match="plan_share"):
        AnalysisOptions(plan_share=0)


def test_the_narrative_gets_its_reserve_even_when_the_last_query_ran_over():
    llm = model([])
    options = AnalysisOptions(max_steps=2, max_seconds=20, narrative_reserve_s=19.9)
    analysis = Analyst(FakeChain(delay_s=0.3), llm, options).analyze(QUESTION, schema_text=SCHEMA)
    narrative = next(o for m, o in llm.calls if "Query results:" in m[-1]["content"])
    # q1 ran 0.3 s, into the reserve: q2 is not asked, and the narrative still gets 19.9 s
    assert analysis.sql_calls == 1 and narrative["timeout"] == 19.9
