"""The ``almanac`` command line on a real SQLite store."""

import json

from server.cli import main


def test_demo_builds_an_inspectable_knowledge_base(tmp_path, capsys):
    assert main(["--data-dir", str(tmp_path), "demo"]) == 0
    out = capsys.readouterr().out
    assert "not built yet" in out and "Visible rules: guest 1, finance 2" in out
    export = tmp_path / "demo-export.jsonl"
    assert len(export.read_text().splitlines()) == 16
    assert main(["--data-dir", str(tmp_path), "kb", "search", "--tag", "[TABLE:income_nova]"]) == 0
    assert "income_nova" in capsys.readouterr().out


def test_export_then_import_into_another_store(tmp_path, capsys):
    first, second = tmp_path / "a", tmp_path / "b"
    main(["--data-dir", str(first), "demo"])
    out_file = tmp_path / "kb.jsonl"
    assert main(["--data-dir", str(first), "kb", "export", str(out_file)]) == 0
    assert main(["--data-dir", str(second), "kb", "import", str(out_file)]) == 0
    again = tmp_path / "again.jsonl"
    main(["--data-dir", str(second), "kb", "export", str(again)])
    assert again.read_bytes() == out_file.read_bytes()


def test_errors_name_the_problem_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"type": "gizmo", "name": "x"}) + "\n")
    assert main(["--data-dir", str(tmp_path), "kb", "import", str(bad)]) == 2
    assert "line 1" in capsys.readouterr().err
    assert main(["--data-dir", str(tmp_path), "kb", "show", "nope"]) == 2
    assert "nope" in capsys.readouterr().err
    assert main(["--data-dir", str(tmp_path), "kb", "stats"]) == 0
    assert "0 active entries" in capsys.readouterr().out
