"""The narrative's number check, its fallback to the computed facts, and the charts."""

from __future__ import annotations

import json

import pytest

from agents.analysis.charts import chart_spec, render_png
from agents.analysis.models import Evidence
from agents.analysis.narrative import NO_ROWS, write_narrative
from agents.analysis.numbers import numbers_in_text, unsupported_number
from agents.analysis.partial_json import parse_cut_json
from agents.analysis.tools import frame, period_change
from tests.agents.scripted import ScriptedLLM

ROWS = [
    ["2024-10", "East", 120.0],
    ["2024-10", "West", 80.0],
    ["2024-11", "East", 60.0],
    ["2024-11", "West", 82.0],
]
EVIDENCE = [
    Evidence(
        id="q1",
        question="revenue by month and region",
        columns=["month", "region", "revenue"],
        rows=ROWS,
    ),
    Evidence(id="q2", question="margin by model", error="no such column: margin"),
]


def facts():
    change = period_change(
        frame(["month", "region", "revenue"], ROWS), "month", "revenue", "region"
    )
    change.evidence = "q1"
    return [change]


def reply(findings, short="Revenue fell from 200 to 142, driven by East."):
    return json.dumps({"short_answer": short, "findings": findings, "caveats": ["q2 failed"]})


def test_numbers_are_read_from_text():
    found = numbers_in_text("fell 29% (from 200 to 142.0) in 2024-11, Q3, q1, 1,234 units")
    assert [(w, v) for w, v, _ in found] == [
        ("29%", 29.0),
        ("200", 200.0),
        ("142.0", 142.0),
        ("2024", 2024.0),
        ("11", 11.0),
        ("1,234", 1234.0),
    ]


@pytest.mark.parametrize(
    ("text", "offending"),
    [
        ("fell by 29%", None),  # -29.0 % in the facts
        ("fell by 0.29 of its value", None),  # the same share written as a fraction
        ("fell by 58", None),  # -58 in the facts, sign ignored
        ("East went from 120 to 60", None),
        ("East went from 121 to 60", None),  # 2 significant digits of 120
        ("East lost 47.3% of its revenue", "47.3%"),
        ("East went from 120 to 65", "65"),
    ],
)
def test_the_number_check(text, offending):
    known = [120.0, 80.0, 60.0, 82.0, 2024, 10, 11, 58.0, 29.0, 200, 142]
    assert unsupported_number(text, known) == offending


def test_a_finding_with_an_invented_number_is_dropped():
    findings = [
        {
            "text": "Revenue fell by 58 (29%) from 2024-10 to 2024-11.",
            "evidence": ["q1"],
            "numbers": [58, 29],
        },
        {
            "text": "East's revenue halved, from 120 to 60.",
            "evidence": ["q1"],
            "numbers": [120, 60],
        },
        {"text": "East lost 47.3% of its customers.", "evidence": ["q1"], "numbers": [47.3]},
        {"text": "West grew to 82.", "evidence": ["q1"], "numbers": [82, 999]},
        {"text": "Margins dropped 12 points.", "evidence": ["q2"], "numbers": [12]},
    ]
    narrative = write_narrative(
        "Why did revenue fall?", "diagnostic", EVIDENCE, facts(), ScriptedLLM([reply(findings)])
    )
    assert narrative.by == "llm"
    kept = [findings[0]["text"], findings[1]["text"], findings[3]["text"]]
    assert [f.text for f in narrative.findings] == kept
    assert narrative.findings[2].numbers == [82]  # the invented 999 is not one it uses
    dropped = {d.text: d for d in narrative.dropped}
    assert dropped[findings[2]["text"]].number == "47.3%"
    assert dropped[findings[4]["text"]].reason == "cites no evidence"  # q2 has no rows
    assert narrative.short_answer.startswith("Revenue fell from 200 to 142")
    assert "q2 failed" in narrative.caveats
    chart = narrative.findings[0].chart
    assert chart["mark"] == "line" and chart["encoding"]["x"]["field"] == "month"
    assert chart["$schema"].endswith("vega-lite/v5.json") and len(chart["data"]["values"]) == 4


def test_a_short_answer_with_an_invented_number_is_replaced():
    findings = [{"text": "East fell from 120 to 60.", "evidence": ["q1"]}]
    llm = ScriptedLLM([reply(findings, short="Revenue fell 35%.")])
    narrative = write_narrative("Why?", "diagnostic", EVIDENCE, facts(), llm)
    assert narrative.short_answer == "East fell from 120 to 60."
    assert narrative.dropped[0].number == "35%"


def test_no_row_in_any_evidence_leaves_nothing_to_claim_and_asks_no_model():
    """The 1.5B answered "driven by the model 'Model A' in the region 'Region B'" from two
    results with columns and no rows: a claim with no number for the check to refuse."""
    empty = [
        Evidence(id="q1", question="Why?", sql="SELECT 1", columns=["region", "model"]),
        Evidence(id="q2", question="By region", error="the query did not run"),
    ]
    made_up = reply([{"text": "Region B drove it.", "evidence": ["q1"]}], short="Model A.")
    llm = ScriptedLLM([made_up])
    narrative = write_narrative("Why did it fall?", "diagnostic", empty, [], llm)
    assert narrative.short_answer == NO_ROWS and narrative.findings == []
    assert narrative.by == "none" and llm.calls == []


@pytest.mark.parametrize(
    "garbage",
    ["not json at all", json.dumps(["a list"]), reply([{"text": "Up 77%.", "evidence": ["q1"]}])],
)
def test_an_unusable_narrative_falls_back_to_the_computed_facts(garbage):
    narrative = write_narrative("Why?", "diagnostic", EVIDENCE, facts(), ScriptedLLM([garbage]))
    assert narrative.by == "facts" and narrative.findings
    assert "East" in narrative.findings[0].text and narrative.findings[0].evidence == ["q1"]
    assert unsupported_number(narrative.findings[0].text, facts()[0].numbers()) is None
    assert narrative.caveats


def test_charts_and_png(tmp_path):
    bar = chart_spec(["country", "singers"], [["France", 4], ["Netherlands", 1]], "singers")
    assert bar["mark"] == "bar" and bar["encoding"]["x"]["field"] == "country"
    assert chart_spec(["n"], [[1], [2]]) is None and chart_spec(["a", "b"], [["x", 1]]) is None
    path = render_png(bar, tmp_path / "bar.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    line = frame(["month", "revenue"], [["2024-01", 1.0], ["2024-02", 2.0]])
    assert render_png(line, tmp_path / "line.png").stat().st_size > 1000


def test_a_reply_cut_off_by_its_token_budget_keeps_what_the_model_completed():
    whole = reply(
        [
            {"text": "East fell from 120 to 60.", "evidence": ["q1"], "numbers": [120, 60]},
            {"text": "West grew from 80 to 82, a small gain.", "evidence": ["q1"]},
        ]
    )
    cut = whole[: whole.index("a small gain")]  # the second finding's text is unfinished
    narrative = write_narrative("Why?", "diagnostic", EVIDENCE, facts(), ScriptedLLM([cut]))
    assert narrative.by == "llm"
    assert [f.text for f in narrative.findings] == ["East fell from 120 to 60."]
    assert any("cut off by its token budget" in c for c in narrative.caveats)
    # a whole reply with words after it was not cut off: no caveat says it was
    after = "```json\n" + whole + "\n```\nI hope this helps."
    narrative = write_narrative("Why?", "diagnostic", EVIDENCE, facts(), ScriptedLLM([after]))
    assert len(narrative.findings) == 2
    assert not any("cut off" in c for c in narrative.caveats), narrative.caveats
    # a reply with nothing complete in it is still unusable
    narrative = write_narrative("Why?", "diagnostic", EVIDENCE, facts(), ScriptedLLM(['{"sho']))
    assert narrative.by == "facts"
    assert any("not JSON" in c for c in narrative.caveats)


def test_cut_json_is_closed_after_the_last_complete_value():
    assert parse_cut_json('```json\n{"a": [1, {"b": "x"}, {"c": "y') == {"a": [1, {"b": "x"}]}
    assert parse_cut_json('{"a": "x", "b"') == {"a": "x"}  # a dangling key is dropped
    assert parse_cut_json('{"a": "say \\"hi\\"", "b": [') == {"a": 'say "hi"'}
    with pytest.raises(ValueError, match="no complete JSON value"):
        parse_cut_json('{"a": "unfinish')


def test_a_finding_citing_the_wrong_query_cites_the_one_that_holds_its_numbers():
    evidence = [
        *EVIDENCE,
        Evidence(id="q3", question="revenue in the last 3 months", columns=["n"], rows=[[None]]),
    ]
    findings = [
        # its numbers are q1's, it cites q3 (whose only cell is NULL)
        {"text": "East fell from 120 to 60.", "evidence": ["q3"]},
        # cites nothing, its numbers are q1's
        {"text": "West reached 82.", "evidence": []},
        # the 3 is the sub-question's own ("the last 3 months"), 80 a q1 cell
        {"text": "Over the last 3 months West made 80.", "evidence": ["q3", "q1"]},
        # 999 is nowhere: still dropped
        {"text": "West made 999.", "evidence": ["q3"]},
    ]
    # no computed facts: a number must be in a query's rows or its sub-question
    llm = ScriptedLLM([reply(findings, short="East fell.")])
    narrative = write_narrative("Why?", "diagnostic", evidence, [], llm)
    kept = {f.text: f.evidence for f in narrative.findings}
    assert kept == {
        "East fell from 120 to 60.": ["q1"],
        "West reached 82.": ["q1"],
        "Over the last 3 months West made 80.": ["q3", "q1"],
    }
    assert [d.text for d in narrative.dropped] == ["West made 999."]


def test_the_prompt_says_when_a_query_gave_no_value_and_shortens_long_cells():
    evidence = [
        Evidence(id="q1", question="average warranty", columns=["avg"], rows=[[None]]),
        Evidence(id="q2", question="tickets", columns=["note"], rows=[["x" * 500]]),
    ]
    llm = ScriptedLLM([reply([])])
    write_narrative("How long are warranties?", "descriptive", evidence, [], llm)
    prompt = llm.calls[0][0][0]["content"]
    assert "no value (every cell is NULL)" in prompt and "None" not in prompt
    assert "x" * 57 + "..." in prompt and "x" * 61 not in prompt
    assert "at most 4 findings" in prompt


def test_a_finding_whose_numbers_only_the_question_holds_cites_nothing_and_is_dropped():
    findings = [
        {"text": "The 3 regions were compared.", "evidence": []},  # 3: the question's only
        {"text": "East fell by 58.", "evidence": []},  # 58: a computed fact on q1
    ]
    llm = ScriptedLLM([reply(findings, short="East fell.")])
    narrative = write_narrative("Compare the 3 regions", "diagnostic", EVIDENCE, facts(), llm)
    assert [(f.text, f.evidence) for f in narrative.findings] == [("East fell by 58.", ["q1"])]
    assert [d.reason for d in narrative.dropped] == ["cites no evidence"]
