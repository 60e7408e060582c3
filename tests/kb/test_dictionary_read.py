"""Reading data dictionaries: every format, flexible headers, and clear refusals."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from kb.dictionary import DictionaryError, read_dictionary
from tests.kb.dictionary_fixtures import CSV, TITLE_1


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_csv_headers_are_matched_flexibly_and_a_row_without_column_describes_the_table(tmp_path):
    dictionary = read_dictionary(_write(tmp_path, "finance.csv", CSV))
    assert dictionary.format == "csv" and dictionary.name == "finance.csv"
    assert len(dictionary.sha256) == 64
    first = dictionary.records[0]
    assert (first.table, first.column, first.description) == ("finrev_fed_17", "c14", TITLE_1)
    assert first.synonyms == ("title one funding", "NCLB money")
    assert first.where == "line 2" and first.database is None
    table = dictionary.records[2]
    assert table.column is None and table.description.startswith("Federal revenue")


def test_semicolon_csv_tsv_and_a_database_column(tmp_path):
    semicolon = "db;TABLE;column_name;desc\nfin;t;c1;first column\n"
    record = read_dictionary(_write(tmp_path, "d.csv", semicolon)).records[0]
    assert (record.database, record.table, record.column, record.description) == (
        "fin",
        "t",
        "c1",
        "first column",
    )
    tsv = "table\tcolumn\tcomment\nt\tc2\tsecond column\n"
    assert read_dictionary(_write(tmp_path, "d.tsv", tsv)).records[0].column == "c2"


def test_json_list_of_records(tmp_path):
    records = [
        {"table": "t", "column": "c14", "description": TITLE_1, "aliases": ["NCLB"]},
        {"Table_Name": "t", "description": "the table"},
    ]
    dictionary = read_dictionary(_write(tmp_path, "d.json", json.dumps(records)))
    assert [r.subject for r in dictionary.records] == ["t.c14", "t"]
    assert dictionary.records[0].synonyms == ("NCLB",) and dictionary.records[1].where == "record 2"


def test_json_and_yaml_mappings_of_tables(tmp_path):
    yaml_text = f"""
database: school_finance
tables:
  finrev_fed_17:
    description: Federal revenue per district
    columns:
      c14: {TITLE_1}
      c15:
        description: Children with disabilities
        synonyms: [IDEA funds]
"""
    dictionary = read_dictionary(_write(tmp_path, "d.yaml", yaml_text))
    assert [(r.subject, r.database) for r in dictionary.records] == [
        ("finrev_fed_17", "school_finance"),
        ("finrev_fed_17.c14", "school_finance"),
        ("finrev_fed_17.c15", "school_finance"),
    ]
    assert dictionary.records[1].description == TITLE_1
    assert dictionary.records[2].synonyms == ("IDEA funds",)
    plain = {"t": {"columns": {"c1": "first"}}, "u": "the u table"}
    found = read_dictionary(_write(tmp_path, "d.json", json.dumps(plain))).records
    assert [(r.subject, r.description) for r in found] == [("t.c1", "first"), ("u", "the u table")]


def test_spider_tables_json_natural_names_beside_the_originals(tmp_path):
    spider = [
        {
            "db_id": "flight_2",
            "table_names": ["airlines"],
            "table_names_original": ["airlines"],
            "column_names": [[-1, "*"], [0, "airline id"], [0, "airline name"]],
            "column_names_original": [[-1, "*"], [0, "uid"], [0, "Airline"]],
        },
        {
            "db_id": "other",
            "table_names": ["things"],
            "table_names_original": ["THINGS"],
            "column_names": [[-1, "*"], [0, "thing name"]],
            "column_names_original": [[-1, "*"], [0, "nm"]],
        },
    ]
    dictionary = read_dictionary(_write(tmp_path, "tables.json", json.dumps(spider)))
    assert dictionary.databases() == ["flight_2", "other"]
    described = {(r.database, r.subject): r.description for r in dictionary.records}
    assert described[("flight_2", "airlines.uid")] == "airline id"
    assert described[("other", "THINGS.nm")] == "thing name"
    assert dictionary.records[1].where == "database flight_2, column 1"


def test_the_shipped_spider_dev_tables_json_reads():
    path = Path("/work/shared/data/spider_dev/tables.json")
    if not path.exists():
        pytest.skip("Spider dev is not on this machine")
    dictionary = read_dictionary(path)
    assert len(dictionary.databases()) == 166


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("empty.csv", b"", "the file is empty"),
        ("blank.json", b"  \n\n", "the file is empty"),
        ("junk.csv", bytes(range(256)) * 10, "binary content"),
        ("latin.csv", "table,description\nt,caf\xe9\n".encode("latin-1"), "not UTF-8"),
        ("d.xlsx", b"table,description\n", "unknown data dictionary format"),
        ("bad.json", b"[{", "not valid JSON"),
        ("bad.yaml", b"a: [b", "not valid YAML"),
        ("head.csv", b"name,text\nt,x\n", "line 1: the header"),
        ("notable.csv", b"table,column,description\n,c1,x\n", "line 2: no table named"),
        ("nodesc.json", b'[{"table": "t", "column": "c"}]', "record 1: no description"),
        ("scalar.json", b"42", "expected a list of records"),
    ],
)
def test_bad_input_is_refused_naming_the_file_and_place(tmp_path, name, content, problem):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(DictionaryError, match=problem) as refused:
        read_dictionary(path)
    assert name in str(refused.value)


def test_a_missing_file_and_a_50_mb_file_are_refused_quickly(tmp_path):
    with pytest.raises(DictionaryError, match="cannot read it"):
        read_dictionary(tmp_path / "absent.csv")
    big = tmp_path / "big.csv"
    with big.open("wb") as handle:
        handle.write(b"table,description\n")
        handle.truncate(50 * 1024 * 1024)
    started = time.monotonic()
    with pytest.raises(DictionaryError, match="over the data dictionary limit") as refused:
        read_dictionary(big)
    assert "big.csv" in str(refused.value) and time.monotonic() - started < 5
