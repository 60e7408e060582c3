"""Bad input in the ask view: a 10,000-row result is paged (the answer's row cap said
honestly, the read-only re-run paged without a freeze), a server restart mid-stream is said and
retried, a refused question shows the server's detail, a cancelled stream stops, and markup in a
question or a value is shown as text, never run."""

from __future__ import annotations

import re
import threading
import time
from typing import Any

from tests.browser.conftest import LiveServer, login, shot
from tests.browser.test_ask import QUESTION, answered, ask

TEN_THOUSAND = (
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000) "
    "SELECT i, 'row ' || i AS label FROM n"
)
SCRIPT = "<script>window.pwned = 1; alert(1)</script>"


def cells(page: Any, scope: str) -> list[list[str]]:
    return page.locator(f"{scope} tbody tr").evaluate_all(
        "rows => rows.map(r => Array.from(r.cells, c => c.textContent))"
    )


def test_ten_thousand_rows_are_paged_without_a_freeze(page, live: LiveServer):
    live.llm.answer(r"ten thousand", TEN_THOUSAND)
    login(page, live, "analyst")
    ask(page, "Show ten thousand numbered rows")
    answered(page)
    # the answer carries the server's row cap (ALMANAC_MAX_ROWS), and says more exist
    rows = page.locator("[data-testid=answer] .rows")
    caption = rows.locator("caption").inner_text()
    cap = live.state.settings.max_rows
    assert f"first {cap:,} rows" in caption and "more exist" in caption
    facts = page.locator("[data-testid=answer-facts]").inner_text()
    assert re.search(rf"Rows\n[\d,]+\+ \({cap:,} shown\)", facts), facts
    assert rows.locator("tbody tr").count() == 25
    # 100 categories make no readable bar chart: none is drawn
    assert page.locator("[data-testid=answer] [data-testid=chart]").count() == 0
    # the read-only re-run brings all 10,000, one page of them in the document
    page.click("[data-testid=rerun]")
    rerun = page.locator("[data-testid=rerun-result]")
    rerun.locator("table").wait_for()
    assert "Rows\n10,000" in rerun.inner_text()
    assert rerun.locator("tbody tr").count() == 25
    assert page.evaluate("document.querySelectorAll('td').length") < 500
    status = rerun.locator("[data-testid=page-status]")
    assert status.inner_text() == "Rows 1–25 of 10000 · page 1 of 400"
    started = time.monotonic()
    rerun.get_by_role("button", name="Next").click()
    assert cells(page, "[data-testid=rerun-result]")[0] == ["26", "row 26"]
    rerun.get_by_role("button", name="Last page").click()
    assert cells(page, "[data-testid=rerun-result]")[-1] == ["10000", "row 10000"]
    # sorting all 10,000 by a column, descending
    header = rerun.locator("thead th").first.locator("button")
    header.click()
    header.click()
    assert cells(page, "[data-testid=rerun-result]")[0] == ["10000", "row 10000"]
    assert status.inner_text() == "Rows 1–25 of 10000 · page 1 of 400"
    assert time.monotonic() - started < 5, "paging and sorting 10,000 rows took too long"
    shot(page, "ask-ten-thousand-rows")
    assert page.page_errors == []


def test_a_restart_mid_stream_is_said_and_retried(page, live: LiveServer):
    login(page, live, "analyst")
    live.llm.delay_s = 3.0
    try:
        ask(page, QUESTION)
        page.wait_for_selector("[data-testid=stages] li[data-stage=generating].current")
        crash = threading.Thread(target=live.crash_and_restart)
        crash.start()
        failure = page.locator("[data-testid=failure]")
        failure.wait_for()
        crash.join(30)
        assert "Connection lost" in failure.inner_text()
        assert page.locator("[data-testid=stages] li.failed").count() == 1
        shot(page, "ask-connection-lost")
    finally:
        live.llm.delay_s = 0.0
    page.click("[data-testid=retry]")
    answered(page)
    assert page.locator("[data-testid=answer] .rows tbody tr").count() == 3
    assert page.page_errors == []


def test_a_graceful_restart_mid_stream_still_ends_the_stream(page, live: LiveServer):
    login(page, live, "analyst")
    live.llm.delay_s = 2.0
    try:
        ask(page, QUESTION)
        page.wait_for_selector("[data-testid=stages] li[data-stage=generating].current")
        restart = threading.Thread(target=live.restart)
        restart.start()
        # the server lets the open stream finish before it stops: the answer comes
        answered(page)
        restart.join(30)
    finally:
        live.llm.delay_s = 0.0
    ask(page, "How many singers are there in each country, after the restart?")
    page.wait_for_selector("[data-testid=answer] .why-question >> text=after the restart")
    assert page.page_errors == []


def test_a_refused_question_shows_the_servers_detail(page, live: LiveServer):
    login(page, live, "analyst")
    limit = live.state.settings.limits.max_question_chars
    ask(page, "x" * (limit + 1))
    failure = page.locator("[data-testid=failure]")
    failure.wait_for()
    text = failure.inner_text()
    assert f"the limit is {limit}" in text and "HTTP 4" in text
    assert "Connection lost" not in text
    shot(page, "ask-refused")
    assert page.page_errors == []


def test_a_failed_query_is_shown_with_its_error(page, live: LiveServer):
    # the repair prompts quote the failing SQL: they get it back, so it never runs
    live.llm.answer(r"no such thing|nothing_here", "SELECT nothing_here FROM singer")
    login(page, live, "analyst")
    ask(page, "Count no such thing")
    answered(page)
    error = page.locator("[data-testid=answer-error]")
    assert "nothing_here" in error.inner_text()
    shot(page, "ask-sql-error")
    assert page.page_errors == []


def test_cancel_aborts_the_stream(page, live: LiveServer):
    login(page, live, "analyst")
    live.llm.delay_s = 2.0
    try:
        ask(page, QUESTION)
        page.click("[data-testid=cancel]")
        page.wait_for_selector("[data-testid=cancelled]")
        assert page.locator("[data-testid=answer]").count() == 0
        assert page.locator("[data-testid=ask]").is_enabled()
    finally:
        live.llm.delay_s = 0.0
    assert page.page_errors == []


def test_markup_in_a_question_or_a_value_is_shown_as_text(page, live: LiveServer):
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    live.llm.answer(r"pwned", f"SELECT '{SCRIPT}' AS label, '<img src=x onerror=alert(2)>' AS b")
    login(page, live, "analyst")
    question = f"{SCRIPT} pwned <img src=x onerror=alert(3)> country?"
    ask(page, question)
    answered(page)
    assert page.locator("[data-testid=why-question]").inner_text().startswith(SCRIPT)
    assert cells(page, "[data-testid=answer] .rows")[0] == [SCRIPT, "<img src=x onerror=alert(2)>"]
    assert SCRIPT in page.locator("[data-testid=sql]").inner_text()
    assert page.locator("[data-testid=history] button").first.inner_text().strip() == question
    assert page.locator("main script, main img").count() == 0
    assert page.evaluate("window.pwned") is None
    shot(page, "ask-markup-as-text")
    assert dialogs == [] and page.page_errors == []


def test_an_error_inside_the_stream_is_shown_with_its_detail(page, live: LiveServer, monkeypatch):
    def broken(messages: Any, **options: Any) -> Any:
        raise RuntimeError("the scripted model broke")

    login(page, live, "analyst")
    monkeypatch.setattr(live.llm, "chat", broken)
    ask(page, QUESTION)
    failure = page.locator("[data-testid=failure]")
    failure.wait_for()
    assert "the scripted model broke" in failure.inner_text()
    assert "Connection lost" not in failure.inner_text()
    shot(page, "ask-stream-error")
    assert page.page_errors == []
