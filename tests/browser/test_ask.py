"""The ask view in a real browser over concert_singer with the scripted model: the answer
streams in with its stages, the SQL is highlighted, the rows fill a sortable, paged table with
a CSV download, a bar chart is drawn, the question's matched spans show the entries they
matched, and the tab keeps its questions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.browser.conftest import LiveServer, login, shot

QUESTION = "How many singers are there in each country?"


def ask(page: Any, question: str, mode: str = "ask") -> None:
    """Type ``question`` in the ask view and press Enter."""
    if mode == "analyse":
        page.click("[role=tab][data-mode=analyse]")
    page.fill("[data-testid=question]", question)
    page.press("[data-testid=question]", "Enter")


def answered(page: Any) -> Any:
    """The answer card once the stream's final event was shown."""
    return page.wait_for_selector("[data-testid=answer]")


def test_a_question_streams_in_with_sql_rows_and_a_bar_chart(page, live: LiveServer):
    login(page, live, "analyst")
    page.wait_for_selector("[data-testid=question]")
    shot(page, "ask-empty")
    ask(page, QUESTION)
    answered(page)
    sql = page.locator("[data-testid=sql] pre.sql")
    assert sql.inner_text().startswith("SELECT country, COUNT(*) AS singers FROM singer")
    keywords = sql.locator("span.kw").all_inner_texts()
    assert keywords[:4] == ["SELECT", "COUNT", "AS", "FROM"]
    table = page.locator("[data-testid=answer] .rows table")
    assert table.locator("thead th").all_inner_texts() == ["Country", "singers"]
    rows = table.locator("tbody tr").evaluate_all(
        "rows => rows.map(r => Array.from(r.cells, c => c.textContent))"
    )
    assert ["France", "4"] in rows and ["Netherlands", "1"] in rows
    # a category and a measure: a bar chart, drawn (its canvas has pixels)
    chart = page.locator("[data-testid=answer] [data-testid=chart]")
    assert chart.get_attribute("data-chart") == "bar"
    drawn = chart.locator("canvas").evaluate(
        "c => c.width > 0 && c.getContext('2d').getImageData(0, 0, c.width, c.height)"
        ".data.some(v => v !== 0)"
    )
    assert drawn
    facts = page.locator("[data-testid=answer-facts]").inner_text()
    assert "Vote share\n100%" in facts and "Samples\n1" in facts and "Rows\n3" in facts
    assert "Tier\nscripted" in facts
    assert "confidence" in page.locator("[data-testid=confidence]").inner_text()
    timings = page.locator("[data-testid=timings]")
    timings.locator("summary").click()
    stages = timings.locator("tbody td:first-child").all_inner_texts()
    assert "retrieve" in stages
    shot(page, "ask-answer")
    assert page.page_errors == []


def test_the_stages_light_up_while_the_answer_streams(page, live: LiveServer):
    login(page, live, "analyst")
    live.llm.delay_s = 1.5
    try:
        ask(page, QUESTION)
        page.wait_for_selector("[data-testid=stages] li[data-stage=generating].current")
        assert (
            page.locator("[data-testid=stages] li[data-stage=retrieving]").get_attribute(
                "data-state"
            )
            == "done"
        )
        assert page.locator("[data-testid=cancel]").is_visible()
        shot(page, "ask-streaming")
        answered(page)
    finally:
        live.llm.delay_s = 0.0
    assert not page.locator("[data-testid=cancel]").is_visible()
    assert page.page_errors == []


def test_the_table_sorts_pages_and_downloads_csv(page, live: LiveServer):
    login(page, live, "analyst")
    ask(page, QUESTION)
    answered(page)
    table = page.locator("[data-testid=answer] .rows table")
    header = table.locator("thead th").nth(1)
    header.locator("button").click()
    assert header.get_attribute("aria-sort") == "ascending"
    header.locator("button").click()
    assert header.get_attribute("aria-sort") == "descending"
    counts = table.locator("tbody tr td:nth-child(2)").all_inner_texts()
    assert counts[0] == "4" and counts == sorted(counts, key=int, reverse=True)
    with page.expect_download() as download:
        page.locator("[data-testid=answer] .rows").get_by_role(
            "button", name="Download CSV"
        ).click()
    text = Path(download.value.path()).read_text(encoding="utf-8")
    assert text.splitlines()[0] == "Country,singers" and "France,4" in text
    assert page.page_errors == []


def test_why_this_sql_marks_the_matched_spans_with_their_entries(page, live: LiveServer):
    login(page, live, "analyst")
    ask(page, QUESTION)
    answered(page)
    why = page.locator("[data-testid=why]")
    marks = why.locator("[data-testid=why-question] mark")
    assert marks.count() >= 1
    question = why.locator("[data-testid=why-question]").evaluate(
        "p => Array.from(p.childNodes, n => n.nodeType === 3 ? n.textContent"
        " : n.firstChild.textContent).join('')"
    )
    assert question == QUESTION  # the marks cut the question, and put it back whole
    marked = [m.lower() for m in marks.evaluate_all("ms => ms.map(m => m.firstChild.textContent)")]
    assert any("country" in m or "singer" in m for m in marked), marked
    # each marked phrase lists the entries it matched, each linking to the knowledge view
    matches = why.locator("[data-testid=why-matches] > li")
    assert matches.count() == marks.count()
    link = matches.first.locator("a.entry-link").first
    assert link.get_attribute("href").startswith("#/knowledge/")
    marks.first.click()
    assert "picked" in matches.first.get_attribute("class")
    shot(page, "ask-why")
    assert page.page_errors == []


def test_the_tab_keeps_its_questions_and_asks_them_again(page, live: LiveServer):
    login(page, live, "analyst")
    live.llm.answer(r"oldest singer", "SELECT name, age FROM singer ORDER BY age DESC LIMIT 1")
    ask(page, "Who is the oldest singer?")
    answered(page)
    ask(page, QUESTION)
    page.wait_for_selector("[data-testid=answer] .rows th >> text=singers")
    history = page.locator("[data-testid=history] button")
    assert history.all_inner_texts()[:2] == [QUESTION, "Who is the oldest singer?"]
    history.nth(1).click()
    page.wait_for_selector("[data-testid=answer] .rows th >> text=age")
    assert page.locator("[data-testid=question]").input_value() == "Who is the oldest singer?"
    page.reload()
    page.wait_for_selector("[data-testid=history] button")
    assert page.locator("[data-testid=history] button").count() == 2
    assert page.page_errors == []


def test_the_view_reads_at_phone_width(page, live: LiveServer):
    page.set_viewport_size({"width": 390, "height": 844})
    login(page, live, "analyst")
    ask(page, QUESTION)
    answered(page)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390 + 1, f"the page scrolls sideways at phone width ({width} px)"
    shot(page, "ask-answer-phone")
    assert page.page_errors == []


def test_a_value_in_the_question_is_marked_with_its_value_entry(page, live: LiveServer):
    live.llm.answer(r"from France", "SELECT name FROM singer WHERE country = 'France'")
    login(page, live, "analyst")
    ask(page, "Which singers are from France?")
    answered(page)
    matches = page.locator("[data-testid=why-matches] > li[data-phrase=France]")
    assert matches.count() == 1, page.locator("[data-testid=why]").inner_text()
    kinds = matches.locator(".badge.kind").all_inner_texts()
    assert "enum" in kinds, kinds  # the profiled values of singer.Country
    # keyboard: the mark takes focus and Enter picks its entries
    mark = page.locator("[data-testid=why-question] mark", has_text="France")
    mark.focus()
    page.keyboard.press("Enter")
    assert "picked" in matches.get_attribute("class")
    assert matches.evaluate("li => document.activeElement === li")
    shot(page, "ask-why-value")
    assert page.page_errors == []


def test_a_time_series_is_drawn_as_a_line_and_samples_are_voted(page, live: LiveServer):
    live.llm.answer(
        r"per release year",
        "SELECT song_release_year AS year, COUNT(*) AS songs FROM singer "
        "GROUP BY song_release_year ORDER BY year",
    )
    login(page, live, "analyst")
    page.select_option("#samples", "3")
    ask(page, "How many songs per release year?")
    answered(page)
    chart = page.locator("[data-testid=answer] [data-testid=chart]")
    assert chart.get_attribute("data-chart") == "line"
    facts = page.locator("[data-testid=answer-facts]").inner_text()
    assert "Samples\n3" in facts and "Vote share\n100%" in facts
    shot(page, "ask-line-chart")
    assert page.page_errors == []
