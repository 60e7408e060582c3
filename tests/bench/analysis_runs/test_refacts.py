"""Facts computed again from a run's stored evidence: an answer narrated from the facts gets
today's facts, one the model narrated is left as it was, and the command writes a new file."""

from __future__ import annotations

import json

from bench.analysis_runs.records import TaskRecord, read_records
from bench.analysis_runs.refacts import main, refact_all

# incidents closed at a time of day over five months: 7, 8, ..., 11 a month
INSTANTS = [
    [f"2024-{m:02d}-{d:02d} 0{d % 9}:15:00", 1] for m in range(1, 6) for d in range(1, 7 + m)
]


def record(task_id: str, narrative_by: str, text: str) -> TaskRecord:
    evidence = {"id": "q1", "question": "incidents over time", "columns": ["closed_at", "n"]}
    evidence["rows"] = INSTANTS
    return TaskRecord(
        task_id=task_id,
        system="almanac-analysis",
        insights=[text],
        summary=text,
        analysis={
            "type": "descriptive",
            "narrative_by": narrative_by,
            "evidence": [evidence],
            "facts": [],
            "findings": [{"text": text, "evidence": ["q1"], "numbers": []}],
            "short_answer": text,
        },
    )


def test_an_answer_narrated_from_facts_gets_the_facts_of_today():
    old = "n went from 1 in 2024-05-10 01:15:00 to 1 in 2024-05-11 02:15:00, a change of +0 (+0%)."
    by_model = "Incidents grew every month."
    new, changed = refact_all([record("flag-1", "facts", old), record("flag-2", "llm", by_model)])
    assert changed == 1
    assert (
        new[0].insights[0] == "n went from 10 in 2024-04 to 11 in 2024-05, a change of +1 (+10%)."
    )
    assert new[0].summary == new[0].insights[0] == new[0].analysis["short_answer"]
    assert new[0].analysis["findings"][0]["chart"]["mark"] == "line"
    assert {f["tool"] for f in new[0].analysis["facts"]} >= {"period_change", "trend_seasonality"}
    assert new[1] == record("flag-2", "llm", by_model)


def test_the_command_writes_a_new_file_and_refuses_to_overwrite(tmp_path, capsys):
    answers = tmp_path / "answers.jsonl"
    answers.write_text(record("flag-1", "facts", "old").model_dump_json() + "\n")
    out = tmp_path / "refacts" / "answers.jsonl"
    assert main(["--answers", str(answers), "--out", str(out)]) == 0
    assert "1 of 1 answers" in capsys.readouterr().out
    assert read_records(out)[0].insights[0].startswith("n went from 10 in 2024-04")
    assert json.loads(answers.read_text())["insights"] == ["old"]
    assert main(["--answers", str(answers), "--out", str(answers)]) == 2
    assert main(["--answers", str(tmp_path / "missing.jsonl"), "--out", str(out)]) == 2
    assert "no answers file" in capsys.readouterr().err
