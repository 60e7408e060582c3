"""Analysis answers in the ask view ("Analyse" mode, v1/analyze/stream) with the scripted
model planning one sub-question and writing a narrative: the short answer, the finding with
its evidence (SQL and rows) and its chart drawn from the Vega-Lite spec's data, and a lookup
answered by the one-SQL chain shown as an ask answer."""

from __future__ import annotations

import json

import pytest

from tests.browser.conftest import LiveServer, login, shot
from tests.browser.test_ask import answered, ask

QUESTION = "Compare the number of singers by country"
STEP = "How many singers are there in each country?"
NARRATIVE = {
    "short_answer": "Most singers are French.",
    "findings": [{"text": "France has the most singers: 4.", "evidence": ["q1"]}],
    "caveats": ["Only six singers are recorded."],
}


@pytest.fixture()
def analyst_model(live: LiveServer) -> LiveServer:
    """The scripted model plans one sub-question and writes the narrative citing it."""
    live.llm.reply(r"Split the analyst's question", json.dumps({"steps": [{"question": STEP}]}))
    live.llm.reply(r"Query results:", json.dumps(NARRATIVE))
    return live


def test_an_analysis_shows_its_answer_findings_evidence_and_chart(page, analyst_model):
    live = analyst_model
    login(page, live, "analyst")
    ask(page, QUESTION, mode="analyse")
    page.wait_for_selector("[data-testid=stages] li[data-stage=typing]")
    analysis = page.locator("[data-testid=analysis]")
    analysis.wait_for()
    assert page.locator("[data-testid=short-answer]").inner_text() == "Most singers are French."
    assert analysis.locator(".badge").first.inner_text() == "descriptive"
    finding = analysis.locator("[data-testid=finding]")
    assert finding.count() == 1
    assert finding.locator("p").first.inner_text() == "France has the most singers: 4."
    # the finding's chart: its Vega-Lite spec drawn as a bar chart with Chart.js
    chart = finding.locator("[data-testid=chart]")
    assert chart.get_attribute("data-chart") == "bar"
    assert chart.locator("canvas").evaluate(
        "c => c.getContext('2d').getImageData(0, 0, c.width, c.height).data.some(v => v !== 0)"
    )
    assert (
        "Only six singers are recorded." in analysis.locator("[data-testid=caveats]").inner_text()
    )
    # its evidence: the sub-question's SQL and rows, opened from the finding
    evidence = analysis.locator("[data-evidence=q1]")
    assert evidence.get_attribute("open") is None
    finding.get_by_role("button", name="q1").click()
    assert evidence.get_attribute("open") == ""
    assert QUESTION in evidence.locator("summary").inner_text()  # q1: the question itself
    summaries = analysis.locator("[data-testid=evidence] summary").all_inner_texts()
    assert any(STEP in text for text in summaries[1:]), summaries  # then the planned step
    assert evidence.locator("pre.sql").inner_text().startswith("SELECT country, COUNT(*)")
    rows = evidence.locator("tbody tr").evaluate_all(
        "rows => rows.map(r => Array.from(r.cells, c => c.textContent))"
    )
    assert ["France", "4"] in rows
    shot(page, "ask-analysis")
    page.set_viewport_size({"width": 390, "height": 844})
    # the charts shrink with the page: nothing scrolls sideways
    page.wait_for_function("document.documentElement.scrollWidth <= 391")
    shot(page, "ask-analysis-phone")
    history = page.locator("[data-testid=history] button").first
    assert "analysis" in history.inner_text() and QUESTION in history.inner_text()
    assert page.page_errors == []


def test_a_lookup_in_analyse_mode_is_answered_by_the_chain(page, analyst_model):
    live = analyst_model
    live.llm.answer(r"How many singers do we have", "SELECT count(*) AS singers FROM singer")
    login(page, live, "analyst")
    ask(page, "How many singers do we have?", mode="analyse")
    answered(page)
    assert page.locator("[data-testid=analysis]").count() == 0
    rows = page.locator("[data-testid=answer] .rows tbody td").all_inner_texts()
    assert rows == ["6"]
    assert page.page_errors == []
