"""The benchmark workspace applies Spider's ``tables.json`` when asked (``--data-dictionary``)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from bench.agent_workspace import AgentWorkspace
from indices.embeddings import HashingEmbedder

TABLES = [
    {
        "db_id": "flight_mini",
        "table_names": ["airlines"],
        "table_names_original": ["AIRLINES"],
        "column_names": [[-1, "*"], [0, "airline id"], [0, "airline name"], [0, "abbreviation"]],
        "column_names_original": [[-1, "*"], [0, "uid"], [0, "Airline"], [0, "Abbreviation"]],
        "column_types": ["text", "number", "text", "text"],
        "foreign_keys": [],
        "primary_keys": [1],
    }
]


@pytest.fixture()
def spider_root(tmp_path: Path) -> Path:
    root = tmp_path / "spider_mini"
    folder = root / "database" / "flight_mini"
    folder.mkdir(parents=True)
    (root / "tables.json").write_text(json.dumps(TABLES), encoding="utf-8")
    with sqlite3.connect(folder / "flight_mini.sqlite") as conn:
        conn.execute("CREATE TABLE AIRLINES (uid INTEGER, Airline TEXT, Abbreviation TEXT)")
        conn.executemany(
            "INSERT INTO AIRLINES VALUES (?, ?, ?)",
            [(1, "United Airlines", "UAL"), (2, "US Airways", "USAir"), (3, "Delta", "DAL")],
        )
    return root


def _columns(workspace: AgentWorkspace) -> dict[str, object]:
    return {e.name: e for e in workspace.store.iterate(type="column")}


@pytest.mark.parametrize("applied", [False, True])
def test_natural_column_names_become_descriptions_only_when_asked(spider_root, tmp_path, applied):
    url = f"sqlite:///{spider_root / 'database' / 'flight_mini' / 'flight_mini.sqlite'}"
    workspace = AgentWorkspace(
        f"sqlite:///{tmp_path / f'kb-{applied}.db'}", HashingEmbedder(), data_dictionary=applied
    )
    try:
        workspace.prepare("flight_mini", url)
        columns = _columns(workspace)
        uid = columns["uid"]
        if not applied:
            assert not uid.description and "airline id" not in uid.synonyms
            return
        assert uid.description == "airline id" and "airline id" in uid.synonyms
        assert uid.metadata["dictionary"]["file"] == "tables.json"
        assert columns["Airline"].description == "airline name"
        assert not columns["Abbreviation"].description  # only its name again: nothing added
        hits = workspace.indices.current().strings.search("the airline id of Delta")
        assert uid.id in {uid_ for match in hits for uid_ in match.ukf_ids}
    finally:
        workspace.close()
