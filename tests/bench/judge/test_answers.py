"""Reading answers: the analysis agent's own answer JSON, and insight answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.analysis.models import AnalysisAnswer as AgentAnswer
from bench.datasets.dataset import DatasetFormatError
from bench.judge.answers import read_analysis_answers, read_insight_answers


def test_the_analysis_agents_answer_is_read(tmp_path: Path) -> None:
    agent = AgentAnswer.model_validate(
        {
            "question": "Why did margin fall in Q3?",
            "type": "diagnostic",
            "typing": {"type": "diagnostic"},
            "plan": {
                "question": "Why did margin fall in Q3?",
                "type": "diagnostic",
                "steps": [
                    {"id": "q1", "question": "Margin by quarter", "purpose": "the change"},
                    {"id": "q2", "question": "Margin by region"},
                ],
            },
            "short_answer": "EMEA drove it.",
            "findings": [{"text": "EMEA margin fell 4 points.", "evidence": ["q2"]}],
            "caveats": ["Q3 is not closed yet."],
            "evidence": [
                {"id": "q1", "question": "Margin by quarter", "sql": "SELECT 1"},
                {"id": "q2", "question": "Margin by region", "sql": None, "error": "no SQL"},
            ],
        }
    )
    path = tmp_path / "answers.jsonl"
    path.write_text(json.dumps({"id": "m1", **agent.model_dump(mode="json")}) + "\n")

    [answer] = read_analysis_answers(path)

    assert answer.id == "m1" and answer.type == "diagnostic"
    assert answer.plan == ("Margin by quarter — the change", "Margin by region")
    assert answer.text == "EMEA drove it.\nEMEA margin fell 4 points.\nQ3 is not closed yet."
    assert [(e.id, e.sql, e.error) for e in answer.evidence] == [
        ("q1", "SELECT 1", None),
        ("q2", "", "no SQL"),
    ]


def test_bad_lines_are_named(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text('{"question": "q", "findings": "not a list"}\n')
    with pytest.raises(DatasetFormatError, match=r"a\.jsonl:1: field 'findings'"):
        read_analysis_answers(path)
    path.write_text('{"insights": []}\n')
    with pytest.raises(DatasetFormatError, match=r"a\.jsonl:1: field 'task_id'"):
        read_insight_answers(path)
