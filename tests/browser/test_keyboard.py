"""The ask view with the keyboard alone (issue 27: keyboard-usable): log in, ask, open the SQL
editor, page the table and send feedback with Tab and Enter only (``page.keyboard``, no
clicks, no ``fill``), the focus visible wherever it lands; and every interactive element of
the ask view has an accessible name, as Chromium's accessibility tree computes it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import LiveServer, shot

FORTY_ROWS = (
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40) "
    "SELECT i AS number, 'row ' || i AS label FROM n"
)
INTERACTIVE_ROLES = {
    "button",
    "link",
    "textbox",
    "searchbox",
    "combobox",
    "listbox",
    "checkbox",
    "radio",
    "tab",
    "switch",
    "slider",
    "spinbutton",
    "menuitem",
    "option",
}
MAX_TABS = 120


def focused(page: Any) -> dict[str, Any]:
    """What has the focus: its tag, text, test id, and whether a focus ring is drawn."""
    return page.evaluate(
        """() => {
          const e = document.activeElement;
          const style = getComputedStyle(e);
          return {
            tag: e.tagName.toLowerCase(),
            text: (e.textContent || "").trim(),
            testid: e.dataset.testid || "",
            ring: style.outlineStyle !== "none" && parseFloat(style.outlineWidth) > 0
              || style.boxShadow !== "none",
          };
        }"""
    )


def tab_to(page: Any, selector: str, text: str | None = None) -> dict[str, Any]:
    """Press Tab until the focused element matches ``selector`` (and reads ``text`` when
    given); it must show a focus ring."""
    seen = []
    for _ in range(MAX_TABS):
        page.keyboard.press("Tab")
        matches = page.evaluate("s => document.activeElement.matches(s)", selector)
        if matches and (text is None or focused(page)["text"] == text):
            now = focused(page)
            assert now["ring"], f"no visible focus on {now}"
            return now
        seen.append(focused(page))
    raise AssertionError(f"{selector!r} not reached in {MAX_TABS} Tabs; focus went {seen}")


def controls(page: Any) -> list[dict[str, Any]]:
    """Interactive nodes of Chromium's accessibility tree: role, accessible name, node id."""
    session = page.context.new_cdp_session(page)
    try:
        nodes = session.send("Accessibility.getFullAXTree")["nodes"]
    finally:
        session.detach()
    return [
        {
            "role": node["role"]["value"],
            "name": str((node.get("name") or {}).get("value") or "").strip(),
            "id": node.get("backendDOMNodeId"),
        }
        for node in nodes
        if not node.get("ignored") and (node.get("role") or {}).get("value") in INTERACTIVE_ROLES
    ]


def unnamed_controls(page: Any, least: int) -> list[dict[str, Any]]:
    """The controls without an accessible name (there must be ``least`` controls at least)."""
    found = controls(page)
    assert len(found) >= least, found
    return [c for c in found if not c["name"]]


def describe(page: Any, missing: list[dict[str, Any]]) -> list[str]:
    """The outer HTML of each unnamed node (for the failure message)."""
    session = page.context.new_cdp_session(page)
    try:
        return [
            session.send("DOM.getOuterHTML", {"backendNodeId": node["id"]})["outerHTML"][:200]
            for node in missing
        ]
    finally:
        session.detach()


@pytest.mark.parametrize("width", [1280, 390], ids=["laptop", "phone"])
def test_ask_edit_page_and_feedback_with_the_keyboard_only(page, live: LiveServer, width: int):
    live.llm.answer(r"forty numbered", FORTY_ROWS)
    page.set_viewport_size({"width": width, "height": 860})
    page.goto(f"{live.url}/ui/")
    page.wait_for_selector("#api-key:focus")  # the login form takes the focus itself
    page.keyboard.type(live.keys["analyst"])
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-testid=question]")
    # the shell focuses the view after mounting it (taking the focus from the question box
    # the view gave it): the question box is then the third Tab stop (after the two modes)
    if not page.evaluate("document.activeElement.matches('[data-testid=question]')"):
        tab_to(page, "[data-testid=question]")
    page.keyboard.type("Show forty numbered rows")
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-testid=answer]")

    # the SQL's Edit button opens the editor, which takes the focus
    assert tab_to(page, "[data-testid=answer] .sql-panel button[aria-expanded]")["text"] == "Edit"
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-testid=sql-editor]:focus")
    assert "WITH RECURSIVE" in page.input_value("[data-testid=sql-editor]")

    # the table's next page, from the editor onwards (Tab leaves the textarea)
    tab_to(page, "[data-testid=answer] .rows .pager button", "Next")
    page.keyboard.press("Enter")
    status = page.locator("[data-testid=answer] .rows [data-testid=page-status]")
    assert status.inner_text() == "Rows 26–40 of 40 · page 2 of 2"
    cells = page.locator("[data-testid=answer] .rows tbody tr td:first-child").all_inner_texts()
    assert cells[0] == "26"

    # feedback: Right
    tab_to(page, "[data-testid=feedback-right]")
    page.keyboard.press("Enter")
    outcome = page.wait_for_selector("[data-testid=feedback-outcome]")
    assert "marked correct" in outcome.inner_text()
    shot(page, f"ask-keyboard-{width}")
    assert page.page_errors == []


def test_every_control_of_the_ask_view_has_an_accessible_name(page, live: LiveServer):
    live.llm.answer(r"forty numbered", FORTY_ROWS)
    page.goto(f"{live.url}/ui/")
    missing = unnamed_controls(page, 3)  # the skip link, the key box, Log in
    assert missing == [], describe(page, missing)
    page.keyboard.type(live.keys["analyst"])
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-testid=question]")
    page.focus("[data-testid=question]")
    page.keyboard.type("Show forty numbered rows")
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-testid=answer]")
    # a nameless control is caught
    page.evaluate("document.querySelector('.ask-form').append(document.createElement('button'))")
    assert [c["role"] for c in unnamed_controls(page, 20)] == ["button"]
    page.evaluate("document.querySelector('.ask-form > button:last-child').remove()")
    # the editor and the feedback's correction open too: their controls are named as well
    page.click("[data-testid=feedback-correct]")
    page.click("[data-testid=rerun]")
    page.wait_for_selector("[data-testid=rerun-result] .result-table")
    page.click("[data-testid=answer] details.timings summary")
    missing = unnamed_controls(page, 20)
    assert missing == [], describe(page, missing)
    # and the list of this tab's questions
    assert page.locator("[data-testid=history] button").count() == 1
    assert page.page_errors == []
