"""Feedback from the ask view: correct the SQL in the editor, re-run it read-only, send it —
the page shows what the server stored and learned, and the store holds the labeled example;
"Right" labels the answer's own SQL; a correction that writes or fails is refused with the
reason."""

from __future__ import annotations

from typing import Any

from tests.browser.conftest import LiveServer, login, shot
from tests.browser.test_ask import QUESTION, answered, ask

CORRECTED = (
    "SELECT country, COUNT(*) AS singers FROM singer WHERE age > 40 GROUP BY country "
    "ORDER BY country"
)


def stored(live: LiveServer, experience_id: str) -> Any:
    """The experience the feedback stored, as the store holds it."""
    return live.state.store.get(experience_id)


def test_correcting_the_sql_stores_a_labeled_example(page, live: LiveServer):
    login(page, live, "analyst")
    ask(page, QUESTION)
    answer_id = answered(page).get_attribute("data-answer-id")
    assert answer_id
    page.click("[data-testid=feedback-correct]")
    editor = page.locator("[data-testid=sql-editor]")
    assert editor.is_visible() and editor.evaluate("e => document.activeElement === e")
    editor.fill(CORRECTED)
    # re-run the edited SQL read-only first: its rows, under the answer's own
    page.click("[data-testid=rerun]")
    rerun = page.locator("[data-testid=rerun-result] table")
    rerun.wait_for()
    rows = rerun.locator("tbody tr").evaluate_all(
        "rows => rows.map(r => Array.from(r.cells, c => c.textContent))"
    )
    assert rows and all(int(count) >= 1 for _, count in rows)
    assert rows != [["France", "4"], ["Netherlands", "1"], ["United States", "1"]]
    page.click("[data-testid=feedback-correct]")  # now "Send the corrected SQL"
    outcome = page.locator("[data-testid=feedback-outcome]")
    outcome.wait_for()
    text = outcome.inner_text()
    assert "marked wrong" in text and "Labeled\nyes" in text
    experience_id = text.split("Experience\n", 1)[1].split("\n", 1)[0]
    shot(page, "ask-feedback-corrected")
    # the store holds it: labeled, with the corrected SQL, for this answer
    experience = stored(live, experience_id)
    assert experience.labeled and experience.sql == CORRECTED
    feedback = experience.content_resources["feedback"]
    assert feedback["answer_id"] == answer_id and feedback["corrected"] is True
    assert feedback["reviewer"] == "analyst"
    assert page.page_errors == []


def test_right_labels_the_answers_own_sql(page, live: LiveServer):
    login(page, live, "analyst")
    ask(page, "How many singers per country, please?")
    answered(page)
    page.fill("#" + page.locator("[data-testid=feedback] input").get_attribute("id"), "spot on")
    page.click("[data-testid=feedback-right]")
    outcome = page.locator("[data-testid=feedback-outcome]")
    outcome.wait_for()
    assert "marked correct" in outcome.inner_text()
    experience_id = outcome.inner_text().split("Experience\n", 1)[1].split("\n", 1)[0]
    experience = stored(live, experience_id)
    assert experience.labeled and experience.content_resources["feedback"]["comment"] == "spot on"
    assert page.page_errors == []


def test_a_correction_that_writes_or_fails_is_refused_with_the_reason(page, live: LiveServer):
    login(page, live, "analyst")
    ask(page, QUESTION)
    answered(page)
    page.click("[data-testid=feedback-correct]")
    page.fill("[data-testid=sql-editor]", "DELETE FROM singer")
    page.click("[data-testid=rerun]")
    error = page.locator("[data-testid=rerun-result] .error")
    error.wait_for()
    assert "not run" in error.inner_text() and "refused" in error.inner_text()
    page.click("[data-testid=feedback-correct]")
    refused = page.locator("[data-testid=feedback] .error")
    refused.wait_for()
    assert "not stored" in refused.inner_text()
    page.fill("[data-testid=sql-editor]", "SELECT nope FROM singer")
    page.click("[data-testid=rerun]")
    page.locator("[data-testid=rerun-result] .error", has_text="nope").wait_for()
    shot(page, "ask-feedback-refused")
    count = live.state.target.execute("SELECT COUNT(*) FROM singer").rows
    assert count == [(6,)]
    assert page.page_errors == []


def test_editing_then_undoing_shows_the_answers_sql_again(page, live: LiveServer):
    login(page, live, "analyst")
    ask(page, QUESTION)
    answered(page)
    panel = page.locator("[data-testid=answer] .sql-panel")
    panel.get_by_role("button", name="Edit").click()
    page.fill("[data-testid=sql-editor]", "SELECT name FROM singer")
    panel.get_by_role("button", name="Done editing").click()
    assert page.locator("[data-testid=sql]").inner_text().strip() == "SELECT name FROM singer"
    assert panel.locator(".badge", has_text="edited").is_visible()
    panel.get_by_role("button", name="Undo edits").click()
    assert page.locator("[data-testid=sql]").inner_text().startswith("SELECT country")
    assert not panel.locator(".badge", has_text="edited").is_visible()
    assert page.page_errors == []
