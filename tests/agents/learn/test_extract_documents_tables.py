"""The model-free table pass: rows keyed by a stored value and glossary rows, on a small
SQLite database laid out like AutoFin (a ``region`` table of codes, one row per country, a
``vehicle_model`` table, a wide ``sales`` table with ``ptd_amt_*`` columns)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.learn.documents import LLMSectionExtractor, extract_documents
from agents.learn.documents.table_codes import is_code_column
from indices.string import StringIndex
from kb.documents import read_document
from kb.profile.profiler import ProfileOptions, profile_database
from kb.store import KnowledgeStore
from kb.target.database import Database
from tests.agents.scripted import ScriptedLLM

REGIONS = [("CHN", "Greater China"), ("EUR", "Europe"), ("NAM", "North America")]
MODELS = [("NV100", "Nova 100", 18000), ("NV200", "Nova 200", 22000), ("NV300", "Nova 300", 26000)]

HANDBOOK = """# Organisation

## Regions

| code | name | also called |
|---|---|---|
| CHN | Greater China | China region, GC region |
| EUR | Europe | continental Europe; EU region |
| NAM | North America | NA region; Nova 100 |
| XYZ | Atlantis | lost region |

## Models

Sales call models by their nicknames.

| code | model | nickname | list price USD |
|---|---|---|---|
| NV200 | Nova 200 | Comet | 22,000 |
| NV100 | Nova 100 | $18,000 | 18,000 |
| NV300 | Nova 300 | a family car that sells well in every region of the group | 26,000 |

## Glossary

| term | stands for | meaning | also said |
|---|---|---|---|
| PTD | period-to-date | The amount of one month. Columns ptd_amt_*. | period to date |
| LP | list price | The price before discounts, column `list_price`. | sticker price |
| FY | fiscal year | April to March. | financial year |
| country | nation state | A nation, one of a region's. | nation |
| fleet | | Cars of one customer. | fleet cars |
| MoM | month over month | | |
"""

EMPTY = {"terms": [], "metrics": [], "rules": [], "value_mappings": [], "taxonomies": []}


def _database(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE region (region_code TEXT, region_name TEXT, country TEXT)")
        db.execute(
            "CREATE TABLE vehicle_model (model_code TEXT, model_name TEXT, list_price INTEGER)"
        )
        db.execute(
            "CREATE TABLE sales (region_code TEXT, model_code TEXT, period TEXT, "
            "ptd_amt_usd REAL, ptd_amt_eur REAL, ptd_amt_cny REAL, ptd_amt_lc REAL)"
        )
        countries = [(*region, f"{region[0]}-{n}") for region in REGIONS for n in range(3)]
        db.executemany("INSERT INTO region VALUES (?, ?, ?)", countries)
        db.executemany("INSERT INTO vehicle_model VALUES (?, ?, ?)", MODELS)
        rows = [
            (region, model, f"2024-{month:02d}", 1.0 * month, 2.0, 3.0, 4.0)
            for region, _ in REGIONS
            for model, _, _ in MODELS
            for month in range(1, 7)
        ]
        db.executemany("INSERT INTO sales VALUES (?, ?, ?, ?, ?, ?, ?)", rows)


@pytest.fixture
def small(tmp_path: Path) -> Iterator[tuple[KnowledgeStore, Database]]:
    _database(tmp_path / "fin.sqlite")
    store = KnowledgeStore(f"sqlite:///{tmp_path / 'knowledge.db'}")
    database = Database(f"sqlite:///{tmp_path / 'fin.sqlite'}")
    profile_database(database, store, database_name="fin", options=ProfileOptions(progress=False))
    yield store, database
    database.close()
    store.close()


def _write(tmp_path: Path, text: str = HANDBOOK) -> Path:
    path = tmp_path / "handbook.md"
    path.write_text(text, encoding="utf-8")
    return path


def _extract(store, database, path, extractor=None, **options):
    return extract_documents(
        store, [read_document(path)], extractor, database="fin", target=database, **options
    )


def _found(store: KnowledgeStore, question: str, phrase: str):
    """The entry the string index finds for ``phrase`` in ``question`` (None: not found)."""
    matches = StringIndex.from_store(store).search(question, mode="longest")
    hits = [m for m in matches if m.text.casefold() == phrase.casefold()]
    return store.get(hits[0].ukf_ids[0]) if hits else None


def test_rows_keyed_by_a_stored_value_become_value_synonyms(small, tmp_path):
    store, database = small
    report = _extract(store, database, _write(tmp_path), activate=True)
    gc = _found(store, "revenue of the GC region last month", "GC region")
    assert gc is not None and gc.type == "synonym"
    assert (gc.content_resources["table"], gc.content_resources["value"]) == ("region", "CHN")
    target = store.get(gc.content_resources["target"])
    assert target.type == "enum" and target.content_resources["value"] == "CHN"
    comet = _found(store, "how many Comet cars were sold", "Comet")
    assert comet is not None and comet.content_resources["value"] == "NV200"
    eu = _found(store, "sales in the EU region", "EU region")  # split on the semicolon
    assert eu is not None and eu.content_resources["value"] == "EUR"
    names = {e.name.casefold() for e in store.get_many(report.candidate_ids).values()}
    # an unknown anchor gives nothing; prices, numbers, sentences and enum values are no synonyms
    unwanted = {"atlantis", "lost region", "$18,000", "18,000", "22,000"}
    assert not names & unwanted and {"china region", "continental europe"} <= names
    entries = store.get_many(report.candidate_ids).values()
    values = {e.content_resources.get("value") for e in entries if e.name.casefold() == "nova 100"}
    assert values == {"NV100"}  # not NAM: a model's name on a region's row
    # a stored name of the anchor's own table is the row's name: kept
    assert {"greater china", "europe", "nova 200", "na region"} <= names
    assert report.tables.rows_read == 13 and report.tables.rows_anchored == 6
    skipped = report.tables.skipped
    assert skipped["price"] == 1 and skipped["long"] == 1 and skipped["not_name_column"] == 3
    assert skipped["enum_value"] == 1  # "Nova 100": a model's name on a region's row
    assert report.skipped_parts == {"no_llm": report.parts} and report.llm_calls == 0
    # provenance: the document, its hash, the section and the row
    note = comet.metadata["document"]
    assert note["sha256"] == read_document(_write(tmp_path)).sha256
    assert (note["locator"], note["table"], note["row"]) == ("Organisation > Models", 1, 1)
    assert comet.metadata["mining"]["miner"] == "documents"


def test_glossary_rows_naming_columns(small, tmp_path):
    store, database = small
    report = _extract(store, database, _write(tmp_path), activate=True)
    entries = store.get_many(report.candidate_ids).values()
    ptd = [e for e in entries if e.name == "PTD"]
    # four ptd_amt_* columns: one glossary entry rather than a synonym per column
    assert len(ptd) == 1 and ptd[0].type == "knowledge"
    assert set(ptd[0].synonyms) == {"period-to-date", "period to date"}
    sticker = _found(store, "models by sticker price", "sticker price")
    assert sticker is not None and sticker.content_resources["column"] == "list_price"
    lp = [e for e in entries if e.name == "LP"]
    assert len(lp) == 1 and lp[0].content_resources["table"] == "vehicle_model"
    assert not [e for e in entries if e.name.casefold() == "list price"]  # the column's name
    # FY names no column: one glossary entry, as build._term makes for a term naming nothing
    fy = [e for e in entries if e.name.casefold() in {"fy", "fiscal year", "financial year"}]
    assert len(fy) == 1 and fy[0].type == "knowledge" and fy[0].name == "FY"
    assert set(fy[0].synonyms) == {"fiscal year", "financial year"}
    assert fy[0].content == "FY (fiscal year): April to March." and fy[0].collection == "glossary"
    note = fy[0].metadata["document"]
    assert (note["locator"], note["table"], note["row"]) == ("Organisation > Glossary", 1, 3)
    assert note["sha256"] == read_document(_write(tmp_path)).sha256
    # a term that is a column's name, a term with no meaning, a word (no "stands for") whose
    # meaning names no column (the model may map it to an element): nothing
    unwanted = {"country", "nation", "mom", "fleet", "fleet cars"}
    assert not [e for e in entries if e.name.casefold() in unwanted]
    assert report.tables.skipped["no_column"] == 1  # fleet
    assert report.tables.skipped["element_name"] == 2  # "list price", "country"
    assert report.tables.skipped["empty"] == 1  # MoM
    assert report.tables.glossary_rows == 5 and report.tables.glossary_knowledge == 2
    assert report.tables.entries["knowledge"] == 2


def test_unchanged_does_nothing_and_a_change_replaces(small, tmp_path):
    store, database = small
    path = _write(tmp_path)
    first = _extract(store, database, path, activate=True)
    version = store.version
    again = _extract(store, database, path, activate=True)
    assert again.documents[0]["status"] == "unchanged" and store.version == version
    assert again.tables.rows_read == 0 and not again.candidate_ids
    _write(tmp_path, HANDBOOK.replace("| EUR | Europe | continental Europe; EU region |\n", ""))
    changed = _extract(store, database, path, activate=True)
    # activated, so deactivated and kept (a candidate never activated would be purged)
    gone = store.get_many(changed.retracted_ids).values()
    assert len(gone) == 3 and all(e.inactive_mark for e in gone)
    assert set(changed.deactivated_ids) == set(changed.retracted_ids) <= set(first.candidate_ids)
    assert _found(store, "sales in the EU region", "EU region") is None
    gc = _found(store, "revenue of the GC region", "GC region")
    assert gc is not None and gc.metadata["document"]["sha256"] == read_document(path).sha256
    assert len(changed.retracted_ids) == 3  # Europe, continental Europe, EU region


def _counting_reply(messages, _options):
    return json.dumps(EMPTY)


def test_the_model_reads_what_the_tables_did_not_cover(small, tmp_path):
    store, database = small
    text = HANDBOOK.replace("| XYZ | Atlantis | lost region |\n", "")
    path = _write(tmp_path, text)
    llm = ScriptedLLM([_counting_reply])
    report = _extract(store, database, path, LLMSectionExtractor(llm), skip_covered_tables=True)
    asked = [m[-1]["content"] for m, _ in llm.calls]
    # Regions is a table whose every row is keyed: no model call; Models has prose, the
    # glossary rows that gave nothing (a column's name, no meaning): both asked
    assert report.skipped_parts == {"tables_covered": 1} and len(asked) == report.parts - 1
    assert not [a for a in asked if "GC region" in a]
    assert report.tables.rows_anchored == 6 and not report.failed_parts


def test_a_run_without_the_model_leaves_the_parts_for_one_with_it(small, tmp_path):
    store, database = small
    path = _write(tmp_path)
    first = _extract(store, database, path)
    llm = ScriptedLLM([_counting_reply])
    second = _extract(store, database, path, LLMSectionExtractor(llm))
    assert first.llm_calls == 0 and second.llm_calls == len(llm.calls) == second.parts
    assert second.documents[0]["status"] == "extracted" and not second.retracted_ids
    third = _extract(store, database, path, LLMSectionExtractor(llm))
    assert third.documents[0]["status"] == "unchanged" and third.llm_calls == 0


def test_a_copied_prompt_example_is_dropped(small, tmp_path):
    store, database = small
    copied = {
        **EMPTY,
        "terms": [{"term": "clients", "aliases": [], "meaning": "people who buy",
                   "table": "example_orders", "column": "customer_id"}],
        "metrics": [{"name": "basket value", "aliases": [], "description": "",
                     "formula": "SUM(example_orders.amount)"}],
        "value_mappings": [{"phrase": "China region", "table": "region",
                            "column": "region_code", "value": "CHN"}],
    }  # fmt: skip
    llm = ScriptedLLM([json.dumps(copied)])
    path = _write(tmp_path, "# Notes\n\nThe China region is CHN.\n")
    report = _extract(store, database, path, LLMSectionExtractor(llm))
    system = llm.calls[0][0][0]["content"]
    assert "example_orders" in system and " orders.amount" not in system
    assert report.dropped == {"copied_example": 2} and report.extracted == {"value_synonym": 1}


DEALERS = """# Dealers

| code | dealer name | also called |
|---|---|---|
| DLR01 | Harbour Motors | the harbour shop |
| DLR02 | Hilltop Cars | hilltop garage; the hill |
| DLR03 | Riverside Autos | |
| DLR04 | Bay Cars | |
| DLR05 | Lake Motors | |
| DLR09 | Ghost Garage | phantom shop |
"""


def _dealers(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE dealer (dealer_code TEXT PRIMARY KEY, city TEXT)")
        rows = [(f"DLR0{n}", f"city {n}") for n in range(1, 6)]
        db.executemany("INSERT INTO dealer VALUES (?, ?)", rows)


def test_a_key_column_of_codes_no_enum_holds_is_checked_on_the_target(tmp_path):
    _database(tmp_path / "fin.sqlite")
    _dealers(tmp_path / "fin.sqlite")
    store = KnowledgeStore(f"sqlite:///{tmp_path / 'knowledge.db'}")
    database = Database(f"sqlite:///{tmp_path / 'fin.sqlite'}")
    try:
        options = ProfileOptions(progress=False)
        profile_database(database, store, database_name="fin", options=options)
        # dealer_code is a primary key of codes: an identifier, no enum to anchor on
        enums = store.iterate(type="enum", tags={"DATABASE": "fin"})
        assert not [e for e in enums if e.content_resources["column"] == "dealer_code"]
        path = _write(tmp_path, DEALERS)
        document = read_document(path)
        without = extract_documents(store, [document], None, database="fin", dry_run=True)
        assert without.tables.rows_anchored == 0  # no target: nothing to check the codes on
        report = _extract(store, database, path, activate=True)
        entries = list(store.get_many(report.candidate_ids).values())
        by_name = {e.name.casefold(): e for e in entries}
        # 5 of the 6 codes are stored (≥ 80 %): the column anchors; DLR09 is not stored
        assert report.tables.rows_anchored == 5 and "ghost garage" not in by_name
        assert "phantom shop" not in by_name
        hill = by_name["the hill"]
        assert hill.type == "predicate" and hill.condition == "dealer.dealer_code = 'DLR02'"
        assert by_name["harbour motors"].condition == "dealer.dealer_code = 'DLR01'"
        assert {"the harbour shop", "hilltop garage", "bay cars"} <= set(by_name)
        assert report.tables.entries["predicate"] == len(entries) == 8
        assert hill.metadata["document"]["row"] == 2
        # dates, numbers, phrases and repeated cells are no codes to look up
        assert is_code_column(["NV200", "CHN"]) and not is_code_column(["NV200", "nv200"])
        assert not is_code_column(["2024-07-20", "2024-06-20"])
        assert not is_code_column(["12", "13"]) and not is_code_column(["Nova 100", "X1"])
    finally:
        database.close()
        store.close()
