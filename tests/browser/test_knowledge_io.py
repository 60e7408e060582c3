"""Import and export in the knowledge view: a file with a bad line is refused whole, with the
line named; a good file is imported; the export downloads the visible knowledge as JSON Lines."""

from __future__ import annotations

import json

from tests.browser.conftest import LiveServer, login, shot
from ukf import KnowledgeUKF


def _line(name: str) -> str:
    entry = KnowledgeUKF.create(name, f"{name} means something", database="concert_singer")
    return entry.to_json()


def test_an_import_with_a_bad_line_imports_nothing_and_names_the_line(
    page, live: LiveServer, tmp_path
):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(_line("Headliner") + "\n" + '{"type": "knowledge", "name": ""}\n')
    before = live.state.store.version
    login(page, live, "ops")
    page.goto(f"{live.url}/ui/#/knowledge")
    page.set_input_files("#k-import-file", str(bad))
    page.click("[data-testid=import]")
    refusal = page.locator("[data-testid=import-error]")
    refusal.wait_for()
    assert "nothing was imported" in refusal.inner_text()
    problems = page.locator(".line-problems li").all_inner_texts()
    assert problems == ["line 2: field 'name': String should have at least 1 character"]
    shot(page, "knowledge-import-refused")
    assert live.state.store.version == before
    assert not [e for e in live.state.store.iterate(type="knowledge") if e.name == "Headliner"]

    # every bad line is listed, not only the first
    broken = tmp_path / "broken.jsonl"
    broken.write_text(_line("Headliner") + '\n{not json\n\n{"type": "gizmo", "name": "x"}\n')
    page.set_input_files("#k-import-file", str(broken))
    page.click("[data-testid=import]")
    page.locator(".line-problems li", has_text="line 4:").wait_for()
    problems = page.locator(".line-problems li").all_inner_texts()
    assert [p.split(":")[0] for p in problems] == ["line 2", "line 4"]
    assert "invalid JSON" in problems[0] and "gizmo" in problems[1]
    assert "2 lines are not valid" in refusal.inner_text()
    assert live.state.store.version == before

    # a refusal that is not about the lines' form (a line the key may not write) says why
    hidden = KnowledgeUKF.create("Theirs", "x", workspace="apac").to_json()
    forbidden = tmp_path / "forbidden.jsonl"
    forbidden.write_text(_line("Headliner") + "\n" + hidden + "\n")
    page.set_input_files("#k-import-file", str(forbidden))
    page.click("[data-testid=import]")
    page.locator("[data-testid=import-error]", has_text="line 2").wait_for()
    assert page.locator(".line-problems").count() == 0
    assert live.state.store.version == before

    good = tmp_path / "good.jsonl"
    good.write_text(_line("Headliner") + "\n" + _line("Opening act") + "\n")
    page.set_input_files("#k-import-file", str(good))
    page.click("[data-testid=import]")
    page.locator("[data-testid=import-outcome]", has_text="Imported 2 entries").wait_for()
    names = {e.name for e in live.state.store.iterate(type="knowledge")}
    assert {"Headliner", "Opening act"} <= names
    shot(page, "knowledge-import-done")
    assert page.page_errors == []


def test_the_export_downloads_the_visible_knowledge_as_json_lines(page, live: LiveServer):
    login(page, live, "analyst")
    page.goto(f"{live.url}/ui/#/knowledge")
    page.select_option("#k-export-type", "table")
    with page.expect_download() as download_info:
        page.click("[data-testid=export]")
    download = download_info.value
    assert download.suggested_filename == "knowledge-table.jsonl"
    lines = download.path().read_text(encoding="utf-8").splitlines()
    entries = [json.loads(line) for line in lines]
    assert {e["type"] for e in entries} == {"table"}
    assert {"singer", "concert", "stadium", "singer_in_concert"} == {e["name"] for e in entries}
    assert page.page_errors == []
