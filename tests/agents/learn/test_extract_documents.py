"""Extraction from documents with a scripted LLM: entries, schema checks, provenance, the
review queue, failed sections, and a PDF."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agents.learn.documents import LLMSectionExtractor, extract_documents
from agents.learn.mine.candidates import is_candidate
from agents.learn.review_queue import ReviewQueue
from indices.string import StringIndex
from kb.documents import read_document
from kb.store import KnowledgeStore
from kb.target.database import Database
from tests.agents.learn.conftest import SPIDER, profiled
from tests.agents.scripted import ScriptedLLM
from tests.kb.test_documents import make_pdf
from ukf import KnowledgeUKF

HANDBOOK = """# Concert handbook

## Terms

| term | meaning |
|---|---|
| vocalist | a singer |
| seats | a stadium's capacity |
| Dutch | singers from the Netherlands |

## Metrics

Fill rate is the average attendance over the capacity.

## Rules

Before the 10th of the month, managers see last month's concerts.

## Notes

Nothing useful here.
"""

EMPTY = {"terms": [], "metrics": [], "rules": [], "value_mappings": [], "taxonomies": []}
ANSWERS: dict[str, Any] = {
    "Terms": {
        "terms": [
            {"term": "vocalist", "aliases": ["performer"], "meaning": "a singer",
             "table": "singer", "column": ""},
            {"term": "seats", "aliases": ["stadium size"], "meaning": "capacity",
             "table": "stadium", "column": "capacity"},
            {"term": "encore", "aliases": [], "meaning": "an extra song", "table": "",
             "column": ""},
            {"term": "tune", "aliases": ["singer"], "meaning": "a song", "table": "singer",
             "column": "Song_Name"},
        ],
        "value_mappings": [
            {"phrase": "Dutch", "table": "singer", "column": "Country", "value": "Netherlands"},
            {"phrase": "Martians", "table": "singer", "column": "Country", "value": "Mars"},
        ],
    },
    "Metrics": {
        "metrics": [
            {"name": "fill rate", "aliases": ["occupancy"], "description": "attendance share",
             "formula": "AVG(stadium.Average) / AVG(stadium.Capacity)"},
            {"name": "ticket revenue", "aliases": [], "description": "",
             "formula": "SUM(stadium.ticket_price)"},
            {"name": "broken", "aliases": [], "description": "", "formula": "SUM((Capacity"},
            {"name": "French singers", "aliases": [], "description": "",
             "formula": "singer.Country = 'France'"},
            {"name": "Martian singers", "aliases": [], "description": "",
             "formula": "Country IN ('Mars', 'France')"},
        ],
        "taxonomies": [
            {"name": "venue hierarchy",
             "levels": [{"table": "stadium", "column": "Location"},
                        {"table": "stadium", "column": "Name"}]},
        ],
    },
    "Rules": {
        "rules": [
            {"name": "last month before the 10th", "rule": "use the previous month",
             "time": "before the 10th of the month", "role": "manager", "region": ""},
        ],
    },
}  # fmt: skip


def scripted_reply(answers: dict[str, Any]):
    """A scripted model answering by the section's last heading (garbage for unknown ones)."""

    def reply(messages: list[dict[str, str]], _options: dict[str, Any]) -> str:
        locator = re.search(r'section "([^"]*)"', messages[-1]["content"]).group(1)
        last = locator.split(" > ")[-1]
        if last == "Notes":
            return "this is not JSON {"
        return json.dumps({**EMPTY, **answers.get(last, {})})

    return reply


@pytest.fixture
def concert(tmp_path: Path) -> Iterator[tuple[KnowledgeStore, Database]]:
    store, database = profiled(
        tmp_path, SPIDER / "concert_singer" / "concert_singer.sqlite", "concert_singer"
    )
    yield store, database
    database.close()
    store.close()


def _extract(store, database, path, llm, **options):
    return extract_documents(
        store,
        [read_document(path)],
        LLMSectionExtractor(llm),
        database="concert_singer",
        target=database,
        **options,
    )


def test_markdown_extraction_checks_merges_and_queues(concert, tmp_path):
    store, database = concert
    path = tmp_path / "handbook.md"
    path.write_text(HANDBOOK, encoding="utf-8")
    llm = ScriptedLLM([scripted_reply(ANSWERS)])
    report = _extract(store, database, path, llm, job_id="job1")
    assert len(llm.calls) == 4  # Terms, Metrics, Rules, Notes (the title holds no text)
    assert report.extracted == {
        "table_synonym": 2,
        "column_synonym": 3,
        "knowledge": 1,
        "value_synonym": 1,
        "metric": 1,
        "taxonomy": 1,
        "rule": 1,
        "predicate": 1,
    }
    assert report.dropped == {
        "value_not_found": 2,
        "unknown_column": 1,
        "formula_unparsable": 1,
        "names_other_element": 1,  # "singer" as a name of the column Song_Name
    }
    assert [f["locator"] for f in report.failed_parts] == ["Concert handbook > Notes"]
    assert report.merge == {"inserted": 11}
    entries = store.get_many(report.candidate_ids)
    assert all(is_candidate(e) for e in entries.values())
    sha = read_document(path).sha256
    for entry in entries.values():
        note = entry.metadata["document"]
        assert note["path"] == str(path) and note["sha256"] == sha
        assert note["locator"].startswith("Concert handbook > ")
    by_name = {e.name: e for e in entries.values()}
    fill = by_name["fill rate"]
    assert fill.content_resources["columns"] == ["stadium.Average", "stadium.Capacity"]
    assert fill.metadata["document"]["locator"] == "Concert handbook > Metrics"
    assert by_name["dutch"].content_resources["value"] == "Netherlands"
    rule = by_name["last month before the 10th"]
    assert rule.triggers == {
        "query_time_window": {"day_of_month_to": 9},
        "user_profile_match": {"role": "manager"},
    }
    waiting, total = ReviewQueue(store).waiting(workspace=None)
    assert by_name["French singers"].type == "predicate"
    assert total == 11 and {item.to_dict()["id"] for item in waiting} == set(report.candidate_ids)
    # candidates are invisible until activated
    found = StringIndex.from_store(store).search("dutch singers")
    assert not [m for m in found if m.text.lower() == "dutch"]


def test_activate_makes_the_phrases_findable(concert, tmp_path):
    store, database = concert
    path = tmp_path / "handbook.md"
    path.write_text(HANDBOOK, encoding="utf-8")
    report = _extract(store, database, path, ScriptedLLM([scripted_reply(ANSWERS)]), activate=True)
    assert sorted(report.activated_ids) == sorted(report.candidate_ids)
    found = StringIndex.from_store(store).search("how many dutch singers", mode="longest")
    dutch = [m for m in found if m.text.lower() == "dutch"]
    assert dutch and store.get(dutch[0].ukf_ids[0]).content_resources["value"] == "Netherlands"


def test_a_dry_run_writes_nothing(concert, tmp_path):
    store, database = concert
    path = tmp_path / "handbook.md"
    path.write_text(HANDBOOK, encoding="utf-8")
    version = store.version
    report = _extract(store, database, path, ScriptedLLM([scripted_reply(ANSWERS)]), dry_run=True)
    assert report.merge == {"inserted": 11} and store.version == version


def test_pdf_extraction_records_the_page(concert, tmp_path):
    store, database = concert
    path = make_pdf(
        tmp_path / "guide.pdf",
        [["Welcome to the guide."], ["GLOSSARY", "Dutch singers come from the Netherlands."]],
    )
    answers = {
        "GLOSSARY": {
            "value_mappings": [
                {"phrase": "Dutch", "table": "singer", "column": "Country", "value": "Netherlands"}
            ]
        }
    }
    llm = ScriptedLLM([scripted_reply(answers)])
    report = _extract(store, database, path, llm)
    assert len(llm.calls) == 2 and report.extracted == {"value_synonym": 1}
    (entry,) = store.get_many(report.candidate_ids).values()
    assert entry.metadata["document"]["locator"] == "page 2 > GLOSSARY"
    assert entry.metadata["document"]["name"] == "guide.pdf"


# not under a heading that says metrics: the structured pass (test_structured_pass.py) leaves
# these sections to the model, whose items are what this test checks
NOTATION = """# Stadium figures

`<size>` is the capacity column a question asks about.

## Seats

`SUM(<size>) WHERE Location = 'Raith Rovers'`

## Crowd

`AVG(Average)`

## Fill

`Crowd / Seats`

## Bad

`SUM(<size>) WHERE Location = 'Atlantis'`

## Shared

`COUNT(DISTINCT Name)`
"""
NOTATION_ANSWERS: dict[str, Any] = {
    "Seats": {"metrics": [{"name": "seats", "aliases": ["capacity sum"], "description": "",
                           "formula": "SUM(<size>) WHERE Location = 'Raith Rovers'"}]},
    "Crowd": {"metrics": [{"name": "crowd", "aliases": [], "description": "",
                           "formula": "AVG(stadium.Average)"}]},
    "Fill": {"metrics": [{"name": "fill", "aliases": [], "description": "",
                          "formula": "Crowd / Seats"},
                         {"name": "emptiness", "aliases": [], "description": "",
                          "formula": "Vacancy / Seats"}]},
    "Bad": {"metrics": [{"name": "atlantis seats", "aliases": [], "description": "",
                         "formula": "SUM(<size>) WHERE Location = 'Atlantis'"}]},
    "Shared": {"metrics": [{"name": "names", "aliases": [], "description": "",
                            "formula": "COUNT(DISTINCT Name)"},
                           {"name": "venue size", "aliases": [], "description": "",
                            "formula": "stadium.Capacity"},
                           {"name": "size", "aliases": [], "description": "",
                            "formula": "<size>"}]},
}  # fmt: skip


def test_formulas_in_a_document_s_own_notation_are_checked_not_dropped(concert, tmp_path):
    """A placeholder, a filter after WHERE and other metrics by name pass the schema check;
    a filter's value the column does not hold, a name that is neither metric nor column, or a
    lone placeholder (no measure) is dropped; a lone column makes the name its synonym."""
    store, database = concert
    path = tmp_path / "metrics.md"
    path.write_text(NOTATION, encoding="utf-8")
    report = _extract(store, database, path, ScriptedLLM([scripted_reply(NOTATION_ANSWERS)]))
    assert report.extracted == {"metric": 4, "column_synonym": 1}
    assert report.dropped == {"value_not_found": 1, "unknown_column": 1, "not_a_measure": 1}
    by_name = {e.name: e for e in store.get_many(report.candidate_ids).values()}
    seats = by_name["seats"].content_resources
    assert seats["placeholders"] == ["<size>"] and seats["columns"] == ["stadium.Location"]
    # one value after WHERE: the chain adds it when a question names "seats"
    assert seats["default_filter"] == {
        "column": "Location",
        "value": "Raith Rovers",
        "tables": ["stadium"],
    }
    assert "default_filter" not in by_name["crowd"].content_resources
    fill = by_name["fill"].content_resources
    assert sorted(fill["metrics"]) == ["crowd", "seats"] and fill["columns"] == []
    # a column without its table that two tables have (stadium.Name, singer.Name) counts
    # for both: a document's formula may hold for several tables
    assert by_name["names"].content_resources["columns"] == ["singer.Name", "stadium.Name"]
    assert by_name["venue size"].type == "synonym"


def test_a_metric_named_by_a_glossary_term_gets_the_term_s_expansions(concert, tmp_path):
    """The glossary (here already in the knowledge base) says what "crowd" is also called;
    the metric the metrics page names "crowd" is found by those words too."""
    store, database = concert
    store.upsert(
        KnowledgeUKF.create(
            "crowd",
            "crowd: the average attendance",
            database="concert_singer",
            synonyms=["attendance", "average attendance"],
            collection="glossary",
        )
    )
    path = tmp_path / "metrics.md"
    path.write_text(NOTATION, encoding="utf-8")
    report = _extract(store, database, path, ScriptedLLM([scripted_reply(NOTATION_ANSWERS)]))
    by_name = {e.name: e for e in store.get_many(report.candidate_ids).values()}
    crowd = by_name["crowd"]
    assert crowd.synonyms == ["attendance", "average attendance"]
    assert len(crowd.content_resources["synonyms_from"]) == 1
    assert by_name["fill"].synonyms == []  # no glossary term names it
