"""``almanac kb dictionary``: the report, dry runs, the audit, and refusals with exit code 2."""

from __future__ import annotations

import json

from kb.engine import create_store_engine
from kb.store import KnowledgeStore
from server.audit import AuditLog
from server.cli import main
from tests.kb.dictionary_fixtures import CSV, FINANCE, TITLE_1, profiled_finance


def test_the_command_imports_a_dictionary_and_reports(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'knowledge.db'}"
    with KnowledgeStore(url) as store:
        profiled_finance(tmp_path, store)
        version = store.version
    dictionary = tmp_path / "finance.csv"
    dictionary.write_text(CSV, encoding="utf-8")
    base = ["--data-dir", str(tmp_path), "--store-url", url, "kb", "dictionary", str(dictionary)]

    assert main([*base, "--database", FINANCE, "--dry-run", "--json"]) == 0
    dry = json.loads(capsys.readouterr().out)
    assert dry["dry_run"] and dry["written"] == 4 and dry["unknown"] == 1
    with KnowledgeStore(url) as store:
        assert store.version == version

    assert main([*base, "--database", FINANCE]) == 0
    out = capsys.readouterr().out
    assert "finance.csv: 4 matched, wrote 4, 0 unchanged, 1 unknown" in out
    assert "unknown finrev_fed_17.c99 of school_finance (line 6)" in out
    with KnowledgeStore(url) as store:
        c14 = store.search(type="column", tags={"DATABASE": FINANCE, "COLUMN": "c14"})[0]
        assert c14.description == TITLE_1
    engine = create_store_engine(url)
    audit = AuditLog(engine).list(action="dictionary")
    engine.dispose()
    assert audit and audit[0].detail["file"] == "finance.csv" and audit[0].entry_count == 4
    assert audit[0].detail["by"].startswith("cli:")

    assert main([*base, "--database", FINANCE, "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["written"] == 0 and again["unchanged"] == 4


def test_a_refused_dictionary_exits_2_naming_the_file(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'knowledge.db'}"
    junk = tmp_path / "junk.csv"
    junk.write_bytes(b"\x00\x01\x02" * 100)
    assert main(["--store-url", url, "kb", "dictionary", str(junk), "--database", "x"]) == 2
    assert "junk.csv: binary content" in capsys.readouterr().err
    plain = tmp_path / "plain.csv"
    plain.write_text(CSV, encoding="utf-8")
    assert main(["--store-url", url, "kb", "dictionary", str(plain), "--database", "x"]) == 2
    assert "no profiled tables of database x" in capsys.readouterr().err
