"""SQL-only signals written into a copy of a recorded run: added where missing, kept where
recorded, nothing invented for answers without SQL or signals."""

from __future__ import annotations

import json
from pathlib import Path

from bench.backfill_signals import backfill, main

CROSSED = "SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T2.id = T2.id"
LINKED = "SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.id = T2.singer_id"


def _row(qid: str, sql: str | None, signals: dict | None) -> dict:
    meta = {} if signals is None else {"signals": signals, "confidence": 0.5}
    return {"id": qid, "predicted_sql": sql, "scores": {"ex": 1.0}, "system_metadata": meta}


def _run(folder: Path, rows: list[dict]) -> Path:
    folder.mkdir()
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "run.json").write_text("{}")
    return folder


def test_missing_sql_signals_are_added_and_recorded_ones_kept(tmp_path: Path):
    run = _run(
        tmp_path / "run",
        [
            _row("crossed", CROSSED, {"repairs": 0.0}),
            _row("linked", LINKED, {"repairs": 1.0}),
            _row("recorded", CROSSED, {"unlinked_joins": 0.0}),  # as recorded: kept
            _row("timeout", None, None),
            _row("unparsed", "SELECT * FROM (", {"repairs": 0.0}),
        ],
    )
    counts = backfill(run, tmp_path / "copy")
    assert counts == {"answers": 5, "unlinked_joins": 2}
    rows = {
        r["id"]: r
        for r in map(json.loads, (tmp_path / "copy" / "results.jsonl").read_text().splitlines())
    }
    assert rows["crossed"]["system_metadata"]["signals"] == {"repairs": 0.0, "unlinked_joins": 1.0}
    assert rows["linked"]["system_metadata"]["signals"]["unlinked_joins"] == 0.0
    assert rows["recorded"]["system_metadata"]["signals"] == {"unlinked_joins": 0.0}
    assert rows["timeout"]["system_metadata"] == {}
    assert "unlinked_joins" not in rows["unparsed"]["system_metadata"]["signals"]
    assert (tmp_path / "copy" / "run.json").read_text() == "{}"  # the other files linked


def test_a_missing_run_or_a_copy_onto_itself_is_refused(tmp_path: Path, capsys):
    assert main(["--run", str(tmp_path / "nothing"), "--out", str(tmp_path / "x")]) == 2
    assert "no results.jsonl" in capsys.readouterr().err
    run = _run(tmp_path / "run", [_row("a", LINKED, {})])
    assert main(["--run", str(run), "--out", str(run)]) == 2
    assert "is the run itself" in capsys.readouterr().err
    assert main(["--run", str(run), "--out", str(tmp_path / "copy")]) == 0
    assert "1 answers copied" in capsys.readouterr().out
