"""The knowledge view in a real browser: find an entry of the profiled concert_singer by
search and by browsing, open it, edit it and deactivate it as ops; what an analyst does not
see; user content shown as text; the review queue."""

from __future__ import annotations

from typing import Any

import httpx

from tests.agents.learn.conftest import labeled
from tests.browser.conftest import LiveServer, login, shot
from ukf import KnowledgeUKF

PWNED = "<script>window.__pwned=1</script>"
IMG = '<img src=x onerror="window.__pwned=2">'


def open_entry_from_table(page: Any, name: str) -> None:
    table = page.locator("[data-testid=knowledge-table]")
    table.get_by_role("link", name=name, exact=True).first.click()
    page.wait_for_selector("[data-testid=entry-name]")


def scoped_ops(live: LiveServer) -> str:
    """An ops key working in workspace ``sales``."""
    _, secret = live.state.keys.create(role="ops", user="sam", workspace="sales")
    return secret


def browse(page: Any, **filters: str) -> None:
    for field, value in filters.items():
        if field == "type":
            page.select_option("#k-type", value)
        else:
            page.fill(f"#k-{field}", value)
    page.click("form[aria-label=Browse] button[type=submit]")
    page.wait_for_selector("[data-testid=knowledge-table], [data-testid=knowledge-results] p.hint")


def test_ops_finds_edits_and_deactivates_concert_singer_knowledge(page, live: LiveServer):
    login(page, live, "ops")
    page.goto(f"{live.url}/ui/#/knowledge")
    # a question finds the entries whose names and values it mentions (string mode)
    page.fill("#k-query", "How many singers are from France?")
    page.click("form[role=search] button[type=submit]")
    hits = page.locator("[data-testid=knowledge-table] a.entry-link")
    hits.first.wait_for()
    names = hits.all_inner_texts()
    assert "France" in names and "singer" in names, names
    shot(page, "knowledge-search")

    # browsing by type lists the tables, highest priority first
    browse(page, type="table")
    tables = page.locator("[data-testid=knowledge-table] a.entry-link").all_inner_texts()
    assert {"singer", "concert", "stadium", "singer_in_concert"} <= set(tables)
    assert page.locator(".pager").inner_text().count("1–4 of 4") == 1
    shot(page, "knowledge-browse")

    open_entry_from_table(page, "singer")
    assert page.locator("[data-testid=entry-name]").inner_text() == "singer"
    entry_id = page.url.rsplit("/", 1)[-1]
    page.locator("[data-testid=entry-text]").filter(has_text="singer").wait_for()
    provenance = page.get_by_role("region", name="Provenance").inner_text()
    assert entry_id in provenance and "Content hash" in provenance
    shot(page, "knowledge-entry")

    # edit: the change is stored and shown after a reload
    page.click("[data-testid=edit]")
    page.fill("#e-short", "Every singer, edited in the browser")
    page.fill("#e-synonyms", "vocalist\nperformer")
    page.click("[data-testid=save]")
    page.locator("[data-testid=entry-short]").filter(has_text="edited in the browser").wait_for()
    page.reload()
    page.locator("[data-testid=entry-short]").filter(has_text="edited in the browser").wait_for()
    stored = live.state.store.get(entry_id)
    assert stored.short_description == "Every singer, edited in the browser"
    assert stored.synonyms == ["vocalist", "performer"]

    # deactivate a value entry after the confirmation, then bring it back
    page.goto(f"{live.url}/ui/#/knowledge")
    browse(page, type="enum", name="France")
    open_entry_from_table(page, "France")
    france = page.url.rsplit("/", 1)[-1]
    dialogs: list[str] = []
    page.once("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.accept()))
    page.click("[data-testid=deactivate]")
    page.locator(".entry-head .badge", has_text="inactive").wait_for()
    assert "Deactivate" in dialogs[0]
    assert live.state.store.get(france).inactive_mark
    shot(page, "knowledge-deactivated")
    page.click("[data-testid=reactivate]")
    page.locator(".entry-head .badge.good", has_text="active").wait_for()
    assert not live.state.store.get(france).inactive_mark
    assert page.page_errors == []


def test_ops_creates_an_entry_and_sees_its_credit_and_blame(page, live: LiveServer):
    login(page, live, "ops")
    page.goto(f"{live.url}/ui/#/knowledge")
    page.get_by_text("New entry").click()
    page.fill("#c-name", "Headline act")
    page.fill("#c-database", "concert_singer")
    page.fill("#c-content", "The singer who closes the concert")
    page.fill("#c-synonyms", "top billing")
    page.click("[data-testid=create-entry]")
    page.locator("[data-testid=entry-name]", has_text="Headline act").wait_for()
    entry_id = page.url.rsplit("/", 1)[-1]
    stored = live.state.store.get(entry_id)
    assert stored.creator == "ops" and stored.tags == ("[DATABASE:concert_singer]",)

    # the counters feedback keeps on an entry (agents.learn.credit) are shown when present
    assert page.locator("[data-testid=entry-feedback]").count() == 0
    feedback = {"credit": 2, "blame": 1, "last_at": "2026-11-25T17:00:00+00:00"}
    live.state.store.upsert(stored.model_copy(update={"metadata": {"feedback": feedback}}))
    page.reload()
    credit = page.locator("[data-testid=entry-feedback]")
    credit.wait_for()
    assert "Credit\n2" in credit.inner_text() and "Blame\n1" in credit.inner_text()
    shot(page, "knowledge-entry-credit")

    # the new synonym is found by a search typed and sent with the keyboard
    page.goto(f"{live.url}/ui/#/knowledge")
    page.fill("#k-query", "who had top billing?")
    page.press("#k-query", "Enter")
    found = page.locator("[data-testid=knowledge-table]")
    found.get_by_role("link", name="Headline act", exact=True).wait_for()
    # facet search: tags
    page.select_option("#k-mode", "facet")
    page.fill("#k-query", "[TABLE:singer]")
    page.press("#k-query", "Enter")
    page.locator("[data-testid=knowledge-table] caption", has_text="(facet)").wait_for()
    assert "Country" in found.locator("a.entry-link").all_inner_texts()
    assert page.page_errors == []


def test_an_admin_sees_who_changed_an_entry(page, live: LiveServer):
    """The entry's writes from the audit log, for keys that may read it (admin)."""
    login(page, live, "ops")
    page.goto(f"{live.url}/ui/#/knowledge")
    browse(page, type="column", name="Capacity")
    open_entry_from_table(page, "Capacity")
    page.locator(".related a", has_text="stadium (table)").wait_for()  # named, not an id
    assert page.locator("[data-testid=entry-history]").count() == 0  # ops: no audit:read
    page.click("[data-testid=edit]")
    page.fill("#e-short", "How many people the stadium holds")
    page.click("[data-testid=save]")
    page.locator("[data-testid=entry-short]").filter(has_text="people the stadium").wait_for()
    entry_url = page.url
    page.context.clear_cookies()
    page.evaluate("sessionStorage.clear()")
    login(page, live, "admin")
    page.goto(entry_url)
    history = page.locator("[data-testid=entry-history] li")
    history.first.wait_for()
    assert "update by ops" in history.first.inner_text()
    assert "short_description" in history.first.inner_text()
    shot(page, "knowledge-entry-history")
    assert page.page_errors == []


def test_a_refused_edit_shows_the_apis_reason(page, live: LiveServer):
    """An ops key working in a workspace may not change global (profiled) knowledge."""
    login(page, live, scoped_ops(live))
    page.goto(f"{live.url}/ui/#/knowledge")
    browse(page, type="table", name="concert")
    open_entry_from_table(page, "concert")
    page.click("[data-testid=edit]")
    page.fill("#e-short", "not allowed")
    page.click("[data-testid=save]")
    refusal = page.locator("[data-testid=edit-error]")
    refusal.filter(has_text="workspace 'sales'").wait_for()
    shot(page, "knowledge-edit-refused")
    assert live.state.store.get(page.url.rsplit("/", 1)[-1]).short_description != "not allowed"
    assert page.page_errors == []


def test_a_declined_confirmation_deactivates_nothing(page, live: LiveServer):
    login(page, live, "ops")
    page.goto(f"{live.url}/ui/#/knowledge")
    browse(page, type="table", name="stadium")
    open_entry_from_table(page, "stadium")
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.click("[data-testid=deactivate]")
    page.wait_for_timeout(300)
    assert not live.state.store.get(page.url.rsplit("/", 1)[-1]).inactive_mark


def test_an_analyst_reads_knowledge_but_sees_no_write_actions(page, live: LiveServer):
    login(page, live, "analyst")
    page.goto(f"{live.url}/ui/#/knowledge")
    page.locator("[data-testid=knowledge-table]").wait_for()
    assert page.locator("[data-testid=import]").count() == 0
    # pages of 25 rows, the next one by its button
    links = page.locator("[data-testid=knowledge-table] a.entry-link")
    first = links.evaluate_all("links => links.map(a => a.getAttribute('href'))")
    total = live.state.store.count(active=True)
    assert len(first) == 25 and f"1–25 of {total}" in page.locator(".pager").inner_text()
    page.get_by_role("button", name="Next →").click()
    page.locator(".pager", has_text=f"26–50 of {total}").wait_for()
    second = links.evaluate_all("links => links.map(a => a.getAttribute('href'))")
    assert len(second) == 25 and not set(second) & set(first)
    assert page.locator("[data-testid=export]").count() == 1  # reading includes exporting
    assert page.locator(".subnav a").all_inner_texts() == ["Browse and search"]
    browse(page, type="table", name="singer")
    open_entry_from_table(page, "singer")
    page.locator("[data-testid=entry-text]").wait_for()
    for action in ("edit", "deactivate", "reactivate"):
        assert page.locator(f"[data-testid={action}]").count() == 0
    shot(page, "knowledge-entry-analyst")
    page.goto(f"{live.url}/ui/#/knowledge/review")
    page.get_by_text("cannot review learned knowledge").wait_for()
    assert page.page_errors == []


def test_knowledge_text_is_shown_as_text_never_as_markup(page, live: LiveServer):
    entry = KnowledgeUKF.create(
        f"{PWNED} Budget {IMG}",
        f"content {PWNED} and {IMG}",
        database="concert_singer",
        description=f"description {IMG}",
        synonyms=[f"syn {PWNED}"],
    )
    body = {"type": "knowledge", **entry.model_dump(mode="json", exclude_defaults=True)}
    created = httpx.post(
        f"{live.url}/v1/knowledge",
        json=body,
        headers={"Authorization": f"Bearer {live.keys['ops']}"},
    )
    assert created.status_code == 201, created.text
    login(page, live, "analyst")
    page.goto(f"{live.url}/ui/#/knowledge")
    browse(page, name=entry.name)
    link = page.locator("[data-testid=knowledge-table] a.entry-link")
    assert link.inner_text() == entry.name  # the markup, literally
    shot(page, "knowledge-script-list")
    link.click()
    page.wait_for_selector("[data-testid=entry-name]")
    page.locator("[data-testid=entry-text]").filter(has_text="<script>").wait_for()
    assert page.locator("[data-testid=entry-name]").inner_text() == entry.name
    assert page.locator("[data-testid=entry-content]").inner_text() == entry.content
    assert IMG in page.locator("[data-testid=entry-description]").inner_text()
    assert page.locator("#view img, #view script").count() == 0
    assert page.evaluate("window.__pwned") is None
    shot(page, "knowledge-script-entry")
    assert page.page_errors == []


def test_ops_reviews_a_mined_candidate(page, live: LiveServer):
    experience = labeled(
        "Which singers are from France?",
        "SELECT name FROM singer WHERE country = 'France'",
        database="concert_singer",
    )
    candidate = KnowledgeUKF.create(
        "French singers",
        "country = 'France' means the singer is French",
        database="concert_singer",
        synonyms=["french"],
        source="auto",
        parents=[experience.id],
        inactive_mark=True,
        metadata={"mining": {"status": "candidate", "job_id": "job-browser", "miner": "test"}},
    )
    duplicate = candidate.clone(name="Singers of France", synonyms=["of france"])
    live.state.store.upsert_many([experience, candidate, duplicate])
    login(page, live, "ops")
    page.goto(f"{live.url}/ui/#/knowledge/review")
    item = page.locator(f"article.review-item[data-id='{candidate.id}']")
    item.wait_for()
    item.get_by_role("button", name="Learned from…").click()
    item.get_by_text("Which singers are from France?").wait_for()
    assert "SELECT name FROM singer" in item.locator("pre.sql").inner_text()
    shot(page, "knowledge-review")
    item.get_by_role("button", name="Edit").click()
    item.locator("textarea").first.fill("country = 'France': a French singer")
    item.get_by_role("button", name="Save changes").click()
    page.locator(f"article.review-item[data-id='{candidate.id}'] pre.content").filter(
        has_text="a French singer"
    ).wait_for()
    page.locator(f"article.review-item[data-id='{candidate.id}'] [data-testid=approve]").click()
    page.locator(f"article.review-item[data-id='{candidate.id}']").wait_for(state="detached")
    page.once("dialog", lambda dialog: dialog.accept("the same as French singers"))
    page.locator(f"article.review-item[data-id='{duplicate.id}'] [data-testid=reject]").click()
    page.get_by_text("Nothing waits for review.").wait_for()
    rejected = live.state.store.get(duplicate.id)
    assert rejected.inactive_mark and rejected.metadata["mining"]["status"] == "rejected"
    stored = live.state.store.get(candidate.id)
    assert not stored.inactive_mark and stored.content == "country = 'France': a French singer"
    assert page.page_errors == []


def test_the_knowledge_views_are_readable_at_phone_width(page, live: LiveServer):
    page.set_viewport_size({"width": 390, "height": 844})
    login(page, live, "ops")
    page.goto(f"{live.url}/ui/#/knowledge")
    page.locator("[data-testid=knowledge-table]").wait_for()
    shot(page, "knowledge-list-phone")
    browse(page, type="table", name="singer")
    open_entry_from_table(page, "singer")
    page.locator("[data-testid=entry-text]").wait_for()
    shot(page, "knowledge-entry-phone")
    page.goto(f"{live.url}/ui/#/knowledge/review")
    page.locator("[data-testid=review-list]").wait_for()
    shot(page, "knowledge-review-phone")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 400, f"the page scrolls sideways at phone width ({width} px)"
    assert page.page_errors == []
