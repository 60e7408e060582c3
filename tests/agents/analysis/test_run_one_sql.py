"""The one-SQL baseline (``Analyst.analyze_one_sql``) and ``analysis_only`` (a goal that reads
like a lookup analysed all the same), with a scripted model and the canned chain."""

from __future__ import annotations

import pytest

from agents.analysis.narrative import NO_ROWS
from agents.analysis.run import AnalysisOptions, Analyst, as_analysis
from agents.analysis.typing import rule_typing
from tests.agents.analysis.test_run import PLAN, QUESTION, SCHEMA, TOTAL, FakeChain, answer, model
from tests.agents.scripted import ScriptedLLM

LOOKUP_GOAL = "Find the discrepancy and imbalance in incidents assigned"


def test_the_one_sql_baseline_writes_up_the_one_answer():
    chain = FakeChain()
    findings = [{"text": "Revenue fell in December.", "evidence": ["q1"]}]
    analysis = Analyst(chain, model(findings)).analyze_one_sql(QUESTION)
    assert chain.asked == [QUESTION] and analysis.sql_calls == 1 and analysis.plan is None
    assert [e.id for e in analysis.evidence] == ["q1"] and analysis.evidence[0].rows
    assert len(analysis.evidence[0].rows) == len(TOTAL)
    assert [f.text for f in analysis.findings] == ["Revenue fell in December."]
    assert analysis.type == "diagnostic" and analysis.narrative_by == "llm"
    assert any(f["tool"] == "trend_seasonality" for f in analysis.facts)


def test_the_one_sql_baseline_goes_on_when_its_query_fails():
    chain = FakeChain()
    analysis = Analyst(chain, model([])).analyze_one_sql(PLAN[2]["question"] + " why")
    assert analysis.sql_calls == 1 and analysis.evidence[0].error.startswith("RuntimeError")
    assert any(c.startswith("missing q1") for c in analysis.caveats)
    assert analysis.findings == [] and analysis.short_answer == NO_ROWS


def test_analysis_only_analyses_a_goal_typed_as_a_lookup():
    assert rule_typing(LOOKUP_GOAL)[0].type == "lookup"
    chain = FakeChain()
    chain.canned[LOOKUP_GOAL] = answer(LOOKUP_GOAL, TOTAL.columns, TOTAL.to_numpy().tolist())
    options = AnalysisOptions(max_steps=3, analysis_only=True)
    llm = model([])
    analysis = Analyst(chain, llm, options).analyze(LOOKUP_GOAL, schema_text=SCHEMA)
    assert analysis.type == "descriptive" and analysis.plan is not None
    assert analysis.lookup is None and analysis.sql_calls == 3
    assert "analysed as descriptive" in analysis.typing.notes[-1]
    # without it the same goal is a lookup, answered by the chain alone
    plain = Analyst(FakeChain(), ScriptedLLM([AssertionError("no call")]))
    chain = plain.ask
    chain.canned[LOOKUP_GOAL] = answer(LOOKUP_GOAL, ["n"], [[3]])
    assert plain.analyze(LOOKUP_GOAL, schema_text=SCHEMA).type == "lookup"


def test_as_analysis_leaves_an_analysis_type_alone():
    typed = rule_typing(QUESTION)[0]
    assert as_analysis(typed) is typed


def test_a_constant_series_is_summarised_without_its_undefined_p_value():
    """flag-2 (InsightBench): a measure constant over time has no p-value (NaN, kept as
    None); its summary says n/a instead of failing the whole analysis."""
    import pandas as pd

    from agents.analysis.timeseries import trend_seasonality

    series = pd.Series([5.0, 5.0, 5.0, 5.0], index=pd.period_range("2023-01", periods=4, freq="M"))
    facts = trend_seasonality(series)
    assert facts.p_value is None and facts.direction == "flat"
    assert "p = n/a" in facts.summary()


def test_the_narrative_reply_is_bounded_by_the_options():
    llm = model([])
    options = AnalysisOptions(narrative_tokens=300)
    Analyst(FakeChain(), llm, options).analyze_one_sql(QUESTION)
    narrative_calls = [o for m, o in llm.calls if "Query results:" in m[-1]["content"]]
    assert [o["max_tokens"] for o in narrative_calls] == [300]
    with pytest.raises(ValueError, match="narrative_tokens"):
        AnalysisOptions(narrative_tokens=10)
