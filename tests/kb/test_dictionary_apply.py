"""Applying a data dictionary: descriptions on Column/Table entries, provenance, re-imports,
descriptions from elsewhere kept, and the opaque column found by the real retriever."""

from __future__ import annotations

from pathlib import Path

import pytest

from indices.index_set import IndexSet
from kb.dictionary import DICTIONARY, DictionaryError, apply_dictionary, read_dictionary
from kb.store import KnowledgeStore
from tests.indices.test_vector_index import WordHashEmbedder
from tests.kb.dictionary_fixtures import CSV, FINANCE, TITLE_1, profiled_finance
from ukf import BaseUKF, QueryContext


@pytest.fixture()
def finance(tmp_path: Path, sqlite_store: KnowledgeStore) -> KnowledgeStore:
    profiled_finance(tmp_path, sqlite_store)
    return sqlite_store


def _column(store: KnowledgeStore, name: str) -> BaseUKF:
    found = store.search(type="column", tags={"DATABASE": FINANCE, "COLUMN": name}, limit=2)
    assert len(found) == 1
    return found[0]


def _import(store: KnowledgeStore, folder: Path, text: str, **options) -> dict:
    path = folder / "finance.csv"
    path.write_text(text, encoding="utf-8")
    return apply_dictionary(store, read_dictionary(path), database=FINANCE, **options).to_dict()


def test_descriptions_and_synonyms_attach_with_their_provenance(finance, tmp_path):
    report = _import(finance, tmp_path, CSV)
    assert report["matched"] == 4 and report["written"] == 4 and report["unchanged"] == 0
    assert report["unknown"] == 1
    assert report["unknown_records"] == [
        {"database": FINANCE, "record": "line 6", "column": "finrev_fed_17.c99"}
    ]
    assert report["per_table"]["school_finance.finrev_fed_17"] == {"written": 4, "unknown": 1}
    c14 = _column(finance, "c14")
    assert c14.description == TITLE_1
    assert {TITLE_1, "title one funding", "NCLB money"} <= set(c14.synonyms)
    note = c14.metadata[DICTIONARY]
    assert note["file"] == "finance.csv" and note["record"] == "line 2" and note["own"]
    assert note["sha256"] == read_dictionary(tmp_path / "finance.csv").sha256
    table = finance.search(type="table", tags={"DATABASE": FINANCE}, limit=1)[0]
    assert table.description == "Federal revenue of each school district in 2017"
    total = _column(finance, "t_fed_rev")  # "total federal revenue" is a name: a synonym too
    assert "Total federal revenue" in total.synonyms


def test_reimporting_an_unchanged_dictionary_writes_nothing(finance, tmp_path):
    _import(finance, tmp_path, CSV)
    version = finance.version
    again = _import(finance, tmp_path, CSV)
    assert again["written"] == 0 and again["unchanged"] == 4
    assert finance.version == version == again["store_version"]


def test_a_changed_dictionary_replaces_what_its_old_version_gave(finance, tmp_path):
    before = _column(finance, "c15")
    _import(finance, tmp_path, CSV)
    changed = CSV.replace(
        "Title 1 (no child left behind act),title one funding;NCLB money",
        "Title I grants to districts,Title I",
    )
    changed = "\n".join(line for line in changed.splitlines() if ",c15," not in line) + "\n"
    report = _import(finance, tmp_path, changed)
    assert report["retracted"] == 1
    c14 = _column(finance, "c14")
    assert c14.description == "Title I grants to districts"
    assert TITLE_1 not in c14.synonyms and "NCLB money" not in c14.synonyms
    assert "Title I" in c14.synonyms
    c15 = _column(finance, "c15")  # dropped from the dictionary: back to what it had
    assert c15.description == before.description and c15.synonyms == before.synonyms
    assert DICTIONARY not in c15.metadata


def test_a_description_from_elsewhere_is_kept_and_listed_unless_overwritten(finance, tmp_path):
    edited = _column(finance, "c14").model_copy(update={"description": "Title I money (edited)"})
    finance.upsert(edited)
    report = _import(finance, tmp_path, CSV)
    assert [k["subject"] for k in report["kept"]] == ["finrev_fed_17.c14"]
    assert report["kept"][0]["kept"] == "Title I money (edited)"
    c14 = _column(finance, "c14")
    assert c14.description == "Title I money (edited)" and "NCLB money" in c14.synonyms
    assert c14.metadata[DICTIONARY]["description"] == TITLE_1
    assert not c14.metadata[DICTIONARY]["own"]

    forced = _import(finance, tmp_path, CSV, overwrite=True)
    assert not forced["kept"] and forced["written"] == 1
    c14 = _column(finance, "c14")
    assert c14.description == TITLE_1
    assert c14.metadata[DICTIONARY]["replaced"] == "Title I money (edited)"
    without = "\n".join(line for line in CSV.splitlines() if ",c14," not in line) + "\n"
    _import(finance, tmp_path, without, overwrite=True)
    assert _column(finance, "c14").description == "Title I money (edited)"


def test_a_dry_run_and_a_refused_import_write_nothing(finance, tmp_path):
    version = finance.version
    report = _import(finance, tmp_path, CSV, dry_run=True)
    assert report["dry_run"] and report["written"] == 4
    assert finance.version == version and not _column(finance, "c14").description
    with pytest.raises(DictionaryError, match="no records about database 'school_finance'"):
        _import(finance, tmp_path, "database,table,description\nelsewhere,t,x\n")
    path = tmp_path / "finance.csv"
    with pytest.raises(DictionaryError, match="no profiled tables of database elsewhere"):
        apply_dictionary(finance, read_dictionary(path))
    path.write_text(CSV, encoding="utf-8")
    with pytest.raises(DictionaryError, match="line 2: the record names no database"):
        apply_dictionary(finance, read_dictionary(path))
    assert finance.version == version


def test_the_opaque_column_is_found_by_its_description_through_the_retriever(finance, tmp_path):
    context = QueryContext(database=FINANCE)
    question = "Which district got the most Title 1 (no child left behind act) money?"
    c14 = _column(finance, "c14")
    indices = IndexSet.build(finance, WordHashEmbedder())
    assert c14.id not in indices.retriever().retrieve(question, context).ids()

    _import(finance, tmp_path, CSV)
    retriever = indices.retriever()  # each retrieve brings the indices up to the store
    found = retriever.retrieve(question, context)
    assert c14.id in found.ids()
    spans = {uid for match in retriever.strings.search(question) for uid in match.ukf_ids}
    assert c14.id in spans
    nearest = indices.vectors.search(
        "no child left behind act", serializers=("name_description",), k=3, types=["column"]
    )
    assert nearest[0].ukf_id == c14.id
    indices.stop()


def test_the_first_record_about_an_entry_wins_and_a_repeated_name_says_nothing(finance, tmp_path):
    text = CSV + "finrev_fed_17,c14,Another text,\nfinrev_fed_17,state_code,State Code,\n"
    report = _import(finance, tmp_path, text)
    assert report["per_table"]["school_finance.finrev_fed_17"]["duplicate"] == 1
    assert report["uninformative"] == 1 and report["matched"] == 5 and report["written"] == 4
    assert _column(finance, "c14").description == TITLE_1
    assert not _column(finance, "state_code").description
