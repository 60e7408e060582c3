"""The structured pass: rule lists and metric sections read without the model, checked by the
same builder as the model's items; their triggers read from the text and checked against the
stored values; the model not asked about a section the pass covered."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.learn.documents import LLMSectionExtractor, extract_documents
from agents.learn.documents.structured import structured_pass
from agents.learn.mine.schema_view import SchemaView
from kb.documents import read_document
from kb.store import KnowledgeStore
from kb.target.database import Database
from tests.agents.learn.conftest import profiled
from tests.agents.scripted import ScriptedLLM

HANDBOOK = """# Reporting rules

- **Default period** (intent): A question without a period asks for the newest month.
- **Refresh before the 10th** (temporal): Before the 10th the newest month is the previous one.
- **Default currency for EU users** (intent): Users in region EU see amounts in EUR.
- **Default currency for Mars users** (intent): Users in region MARS see amounts in credits.
- **Default view A** (intent): The user's profile says caliber A: filter caliber = 'A'.
- Refunds: never count refunds as revenue, whatever the channel.

# Notes

- A list item that states nothing in the shape of a rule.

# Metrics

## Revenue

`SUM(amount) WHERE item = 'Revenue'`

All sales income.

Also: sales, turnover.

## Margin

`(Revenue - Cost) / Revenue`

Also: GM.

## Cost

`SUM(amount) WHERE item = 'Cost'`

## Uplift

`SUM(bonus_points)`

## Share of wallet

`our sales / all sales of the customer`
"""


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[tuple[KnowledgeStore, Database]]:
    path = tmp_path / "ledger.sqlite"
    with sqlite3.connect(path) as connection:
        connection.execute(
            "CREATE TABLE income (period TEXT, region_code TEXT, caliber TEXT, item TEXT, "
            "amount REAL)"
        )
        rows = [
            (f"2024{m:02d}", region, caliber, item, 10.0)
            for m in range(1, 13)
            for region in ("EU", "US")
            for caliber in ("A", "B")
            for item in ("Revenue", "Cost")
        ]
        connection.executemany("INSERT INTO income VALUES (?, ?, ?, ?, ?)", rows)
    store, database = profiled(tmp_path, path, "ledger")
    yield store, database
    database.close()
    store.close()


def _document(tmp_path: Path, text: str = HANDBOOK):
    page = tmp_path / "handbook.md"
    page.write_text(text, encoding="utf-8")
    return read_document(page)


def test_rule_lists_and_metric_sections_become_items(ledger, tmp_path):
    store, _database = ledger
    found = structured_pass(_document(tmp_path), SchemaView(store, "ledger"))
    rules = {r["name"]: r for _locator, items in found.sections for r in items["rules"]}
    assert list(rules) == [
        "Default period",
        "Refresh before the 10th",
        "Default currency for EU users",
        "Default currency for Mars users",
        "Default view A",
        "Refunds",  # "Name: text" under a heading that says rules
    ]
    assert rules["Default period"]["kind"] == "intent"
    assert rules["Refresh before the 10th"]["time"] == "Before the 10th"
    assert rules["Default currency for EU users"]["profile"] == {"region": "EU"}
    assert "profile" not in rules["Default currency for Mars users"]  # MARS is no stored region
    assert rules["Default view A"]["profile"] == {"caliber": "A"}
    metrics = {m["name"]: m for _locator, items in found.sections for m in items["metrics"]}
    assert metrics["Revenue"] == {
        "name": "Revenue",
        "formula": "SUM(amount) WHERE item = 'Revenue'",
        "aliases": ["sales", "turnover"],
        "description": "All sales income.",
    }
    assert {"Revenue", "sales", "Margin", "GM"} <= found.metric_names
    # the rules section and each metric section are read whole; "Notes" is not a rule list
    locators = [locator for locator, _items in found.sections]
    assert "Notes" not in locators
    assert len(found.covered_sections) == 1 + 5


def test_the_items_are_checked_and_stored_with_their_triggers(ledger, tmp_path):
    store, database = ledger
    report = extract_documents(
        store, [_document(tmp_path)], None, database="ledger", target=database, activate=True
    )
    entries = list(store.get_many(report.candidate_ids).values())
    by_name = {e.name: e for e in entries}
    assert by_name["Refresh before the 10th"].triggers == {
        "query_time_window": {"day_of_month_to": 9}
    }
    assert by_name["Refresh before the 10th"].content_resources["kind"] == "temporal"
    assert by_name["Default currency for EU users"].triggers == {
        "user_profile_match": {"region": "EU"}
    }
    assert by_name["Default view A"].triggers == {"user_profile_match": {"caliber": "A"}}
    assert by_name["Revenue"].type == "metric" and "turnover" in by_name["Revenue"].synonyms
    assert by_name["Margin"].content_resources["metrics"] == ["Revenue", "Cost"]
    # a column the schema does not have, and a formula in words: dropped by the same checks
    assert "Uplift" not in by_name and "Share of wallet" not in by_name
    assert report.dropped["unknown_column"] >= 1 and report.dropped["formula_unparsable"] >= 1
    assert all(e.metadata["document"]["name"] == "handbook.md" for e in entries)


def test_the_model_is_not_asked_about_a_section_the_pass_read_whole(ledger, tmp_path):
    store, _database = ledger
    empty = {"terms": [], "metrics": [], "rules": [], "value_mappings": [], "taxonomies": []}
    llm = ScriptedLLM([lambda messages, options: json.dumps(empty)])
    report = extract_documents(
        store, [_document(tmp_path)], LLMSectionExtractor(llm), database="ledger"
    )
    asked = [m[-1]["content"] for m, _options in llm.calls]
    assert any("A list item that states nothing" in prompt for prompt in asked)  # Notes
    assert not any("Default period" in prompt for prompt in asked)
    assert not any("All sales income" in prompt for prompt in asked)
    assert report.skipped_parts["structured"] == 6
