"""Asking the judge: JSON extraction, the log, and failures recorded rather than raised."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.llm.base import LLMOutputError, LLMTimeoutError
from bench.judge.core import JudgeLog, JudgeParseError, ask, extract_json, number_in
from tests.agents.scripted import ScriptedLLM
from tests.bench.judge.judges import GARBAGE


def test_extract_json_tolerates_fences_and_chatter() -> None:
    assert extract_json('```json\n{"score": 1}\n```') == {"score": 1}
    assert extract_json('Sure! {"score": 0.5, "reason": "x"} Hope it helps') == {
        "score": 0.5,
        "reason": "x",
    }
    with pytest.raises(JudgeParseError, match="no JSON object"):
        extract_json(GARBAGE)


def test_number_in_range() -> None:
    assert number_in({"score": "0.25"}, "score", 0, 1) == 0.25
    with pytest.raises(JudgeParseError, match="outside"):
        number_in({"score": 7}, "score", 0, 1)
    with pytest.raises(JudgeParseError, match="not a number"):
        number_in({"score": True}, "score", 0, 1)


def _ask(judge: ScriptedLLM, judge_log: JudgeLog):
    return ask(
        judge,
        judge_log,
        protocol="insightbench",
        item="flag-1/summary",
        step="summary",
        template="insightbench_summary.j2",
        parse=lambda reply: number_in(reply, "score", 0, 1),
        goal="G",
        truth="T",
        prediction="P",
    )


def test_every_call_is_logged_as_a_json_line(tmp_path: Path) -> None:
    judge = ScriptedLLM(['{"score": 0.75}', GARBAGE])
    with JudgeLog(tmp_path / "judge.jsonl") as judge_log:
        good, bad = _ask(judge, judge_log), _ask(judge, judge_log)

    assert good.ok and good.value == 0.75
    assert not bad.ok and bad.value is None and "unparseable reply" in bad.error
    lines = [json.loads(line) for line in (tmp_path / "judge.jsonl").read_text().splitlines()]
    assert [line["verdict"] for line in lines] == [0.75, None]
    assert lines[1]["reply"] == GARBAGE and lines[1]["error"] == bad.error
    assert lines[0]["protocol"] == "insightbench" and lines[0]["item"] == "flag-1/summary"
    assert lines[0]["messages"][0]["role"] == "system"
    assert "Ground-truth summary of the analysis:\nT" in lines[0]["messages"][1]["content"]
    assert judge.calls[0][1]["temperature"] == 0.0


def test_a_failing_judge_is_recorded_not_raised() -> None:
    judge_log = JudgeLog()
    timeout = _ask(ScriptedLLM([LLMTimeoutError("no answer in 60 s")]), judge_log)
    malformed = _ask(ScriptedLLM([LLMOutputError("not JSON", raw="{score:")]), judge_log)

    assert not timeout.ok and "LLMTimeoutError" in timeout.error
    assert judge_log.records[0]["reply"] is None
    assert not malformed.ok and judge_log.records[1]["reply"] == "{score:"
