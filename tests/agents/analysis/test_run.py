"""The Analyst end to end with a scripted model and a fake chain returning canned answers."""

from __future__ import annotations

import json
import time

import pytest

from agents.analysis.run import AnalysisOptions, Analyst
from agents.answer import Answer, CandidateSummary
from agents.confidence.report import Abstention
from tests.agents.analysis.test_tools import monthly_sales
from tests.agents.scripted import ScriptedLLM

SCHEMA = "CREATE TABLE sales (\n  month TEXT,\n  region TEXT,\n  model TEXT,\n  revenue REAL\n)"
QUESTION = "Why did revenue fall in December?"
SALES = monthly_sales()
BY_REGION = SALES.groupby(["month", "region"], as_index=False)["revenue"].sum()
BY_MODEL = SALES.groupby(["month", "model"], as_index=False)["revenue"].sum()
TOTAL = SALES.groupby("month", as_index=False)["revenue"].sum()
PLAN = [
    {"question": "Revenue by month and region", "purpose": "who drove it", "measure": "revenue"},
    {"question": "Revenue by month and model", "purpose": "which model"},
    {"question": "Discounts by month", "purpose": "discounts"},
]


def answer(question: str, columns=(), rows=(), **fields) -> Answer:
    return Answer(
        id="a",
        question=question,
        database="sales",
        columns=list(columns),
        rows=[list(r) for r in rows],
        row_count=len(rows),
        executed=True,
        **{"sql": "SELECT 1", **fields},
    )


class FakeChain:
    """Canned answers by question; a question it does not know raises."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.asked: list[str] = []
        self.delay_s = delay_s
        self.canned = {
            QUESTION: answer(QUESTION, TOTAL.columns, TOTAL.to_numpy().tolist()),
            PLAN[0]["question"]: answer(
                PLAN[0]["question"], BY_REGION.columns, BY_REGION.to_numpy().tolist()
            ),
            PLAN[1]["question"]: answer(
                PLAN[1]["question"], BY_MODEL.columns, BY_MODEL.to_numpy().tolist()
            ),
        }

    def __call__(self, question: str) -> Answer:
        self.asked.append(question)
        time.sleep(self.delay_s)
        if question not in self.canned:
            raise RuntimeError(f"no such column: discount (asked {question!r})")
        return self.canned[question]


def model(findings) -> ScriptedLLM:
    """Plans ``PLAN`` and writes a narrative with ``findings`` (routed by the prompt)."""

    def reply(messages, options):
        prompt = messages[-1]["content"]
        if "Split the analyst's question" in prompt:
            return json.dumps({"steps": PLAN})
        if "Query results:" in prompt:
            return json.dumps(
                {
                    "short_answer": "Revenue fell, driven by East.",
                    "findings": findings,
                    "caveats": [],
                }
            )
        raise AssertionError(f"unexpected prompt: {prompt[:80]}")

    return ScriptedLLM([reply])


def change_of(analysis, evidence_id):
    return next(
        f for f in analysis.facts if f["tool"] == "period_change" and f["evidence"] == evidence_id
    )


def test_an_analysis_end_to_end_keeps_going_past_a_failing_subquestion():
    events: list[dict] = []
    chain = FakeChain()
    # the model cites the numbers of the computed change, and one it invented
    probe = Analyst(chain, model([]), AnalysisOptions(max_steps=4)).analyze(
        QUESTION, schema_text=SCHEMA
    )
    change = change_of(probe, "q2")
    east = change["contributions"][0]
    assert east["segment"] == "East"
    findings = [
        {
            "text": f"East's revenue changed by {east['change']} between "
            f"{change['previous_period']} and {change['last_period']}.",
            "evidence": ["q2"],
        },
        {"text": "Aurora's revenue fell by 73.5%.", "evidence": ["q3"]},
    ]
    analysis = Analyst(FakeChain(), model(findings), AnalysisOptions(max_steps=4)).analyze(
        QUESTION, schema_text=SCHEMA, on_event=events.append
    )
    assert analysis.type == "diagnostic" and analysis.typing.by == "rules"
    assert [e.id for e in analysis.evidence] == ["q1", "q2", "q3", "q4"]
    assert analysis.sql_calls == 4 and analysis.evidence[0].question == QUESTION
    assert analysis.evidence[3].error.startswith("RuntimeError: no such column")
    assert any(c.startswith("missing q4 (discounts)") for c in analysis.caveats)
    assert [f.text for f in analysis.findings] == [findings[0]["text"]]
    assert analysis.dropped[0].number == "73.5%" and analysis.narrative_by == "llm"
    assert change_of(analysis, "q3")["contributions"][0]["segment"] == "Aurora"
    assert analysis.findings[0].chart["mark"] == "line"
    stages = [e["stage"] for e in events]
    assert stages == [
        "typing",
        "plan",
        *["subquestion"] * 4,
        "analysis",
        "narrative",
        "final",
    ]
    assert events[-1]["answer"]["short_answer"] == "Revenue fell, driven by East."
    json.dumps(events)  # what an SSE stream sends


def test_a_lookup_goes_through_the_chain_as_today():
    chain = FakeChain()
    chain.canned["How many orders are there?"] = answer(
        "How many orders are there?", ["count"], [[42]]
    )
    llm = ScriptedLLM([AssertionError("a lookup needs no model call here")])
    analysis = Analyst(chain, llm).analyze("How many orders are there?", schema_text=SCHEMA)
    assert analysis.type == "lookup" and analysis.plan is None and llm.calls == []
    assert chain.asked == ["How many orders are there?"] and analysis.sql_calls == 1
    assert analysis.lookup.rows == [[42]] and analysis.short_answer == "count: 42"


def test_a_forecast_without_a_time_column_is_refused_with_a_reason():
    chain = FakeChain()
    analysis = Analyst(chain, ScriptedLLM(["{}"])).analyze(
        "What will the average age be next year?",
        schema_text="CREATE TABLE singer (\n  Name TEXT,\n  Age INTEGER\n)",
    )
    assert analysis.refused and "time column" in analysis.refused
    assert chain.asked == [] and analysis.evidence == []


def test_the_analysis_is_bounded_in_time():
    chain = FakeChain(delay_s=0.3)
    options = AnalysisOptions(max_steps=4, max_seconds=0.4)
    analysis = Analyst(chain, model([])).analyze(QUESTION, schema_text=SCHEMA)  # warm-up: no bound
    assert analysis.sql_calls == 4
    chain = FakeChain(delay_s=0.3)
    analysis = Analyst(chain, model([]), options).analyze(QUESTION, schema_text=SCHEMA)
    assert analysis.sql_calls == 2 and len(chain.asked) == 2
    assert analysis.evidence[2].error.startswith("not asked: the 0.4 s budget")
    assert analysis.narrative_by == "facts" and analysis.findings  # the facts still speak


def test_an_abstained_subanswer_is_missing_evidence():
    chain = FakeChain()
    chain.canned[PLAN[2]["question"]] = answer(
        PLAN[2]["question"], abstained=True, abstention=Abstention(reasons=["unsure of 'discount'"])
    )
    analysis = Analyst(chain, model([]), AnalysisOptions(max_steps=4)).analyze(
        QUESTION, schema_text=SCHEMA
    )
    assert "abstained: unsure of 'discount'" in analysis.evidence[3].error


def test_options_are_checked():
    with pytest.raises(ValueError, match="max_steps"):
        AnalysisOptions(max_steps=0)


def test_a_result_whose_dates_were_subtracted_in_days_says_so_to_the_narrative():
    sql = "SELECT region, AVG((JULIANDAY(closed_at) - JULIANDAY(opened_at))) AS ttr FROM t"
    days = CandidateSummary(
        sql=sql, notes=["days between dates stored as text: closed_at - opened_at computed"]
    )
    other = CandidateSummary(sql="SELECT 2", notes=["days between dates stored as text: x"])
    rows = [["East", 2.5], ["West", 1.0], ["North", 9.0]]
    asked = "Describe the distribution of ttr by region"
    chain = FakeChain()
    chain.canned = {
        q: answer(q, ["region", "ttr"], rows, sql=sql, candidates=[other, days])
        for q in (asked, *(p["question"] for p in PLAN))
    }
    prompts = []

    def reply(messages, options):
        prompts.append(messages[-1]["content"])
        if "Split the analyst's question" in messages[-1]["content"]:
            return json.dumps({"steps": PLAN[:1]})
        return json.dumps({"short_answer": "North is slowest.", "findings": [], "caveats": []})

    analyst = Analyst(chain, ScriptedLLM([reply]), AnalysisOptions(max_steps=2, max_seconds=60))
    analysis = analyst.analyze(asked, schema_text=SCHEMA)
    assert analysis.evidence[0].notes == ["the differences of dates in these rows are in days"]
    assert "(the differences of dates in these rows are in days)" in prompts[-1]
    # a query the chain did not rewrite says nothing
    chain.canned = {q: answer(q, ["region", "ttr"], rows) for q in chain.canned}
    analysis = analyst.analyze(asked, schema_text=SCHEMA)
    assert analysis.evidence[0].notes == []
