"""The model's verdict on an answer as a probability: read from the first token's log
probability, left out when unreadable; the bench command writes it beside a run's signals;
the real model gives one on a real question."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from agents.confidence.self_check import SelfCheck, schema_ddl, verdict_of
from agents.llm.base import ChatResult, Completion, LLMTimeoutError
from bench.self_check import SIGNAL, check_run


class Replying:
    """Replies ``text`` with first-token log probability ``logprob`` (or raises ``error``)."""

    name = "replying"

    def __init__(self, text: str, logprob: float | None, error: Exception | None = None):
        self.text, self.logprob, self.error = text, logprob, error
        self.calls: list[Any] = []

    def chat(self, messages, **options) -> ChatResult:
        self.calls.append((messages, options))
        if self.error is not None:
            raise self.error
        logprobs = (self.logprob,) if self.logprob is not None else None
        return ChatResult([Completion(self.text, "stop", logprobs=logprobs)], self.name, 10, 1, 0.1)


@pytest.mark.parametrize(
    "text, logprob, expected",
    [
        ("yes", math.log(0.9), 0.9),
        (" Yes.", math.log(0.6), 0.6),
        ("No", math.log(0.8), 0.2),
        ("maybe", math.log(0.9), None),  # not a yes or a no: unread
        ("yes", None, None),  # no log probability: unread, never made up
    ],
)
def test_the_verdict_is_read_from_the_first_token(text, logprob, expected):
    verdict = verdict_of(text, (logprob,) if logprob is not None else None)
    assert verdict.p_yes == (pytest.approx(expected) if expected is not None else None)


def test_the_prompt_shows_schema_question_and_sql_and_asks_two_tokens(concert):
    _, database, _ = concert
    schema = schema_ddl(database)
    assert "CREATE TABLE singer (Singer_ID INT" in schema and "PRIMARY KEY (Singer_ID)" in schema
    assert "FOREIGN KEY (Singer_ID) REFERENCES singer (Singer_ID)" in schema
    llm = Replying("yes", math.log(0.7))
    verdict = SelfCheck(llm).verdict("How many singers?", schema, "SELECT COUNT(*) FROM singer")
    assert verdict.p_yes == pytest.approx(0.7)
    ((messages, options),) = llm.calls
    prompt = messages[-1]["content"]
    assert "How many singers?" in prompt and "SELECT COUNT(*) FROM singer" in prompt
    assert "CREATE TABLE singer" in prompt and options["max_tokens"] == 2
    failed = SelfCheck(Replying("", None, LLMTimeoutError("slow"))).verdict("q", schema, "SELECT 1")
    assert failed.p_yes is None


def test_the_bench_command_writes_the_signal_beside_the_recorded_ones(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    rows = [
        {
            "id": "a",
            "question": "How many singers?",
            "database": "concert_singer",
            "predicted_sql": "SELECT COUNT(*) FROM singer",
            "scores": {"ex": 1.0},
            "system_metadata": {"confidence": 0.8, "signals": {"repairs": 0.0}},
        },
        {
            "id": "b",
            "question": "Oldest singer?",
            "database": "concert_singer",
            "predicted_sql": "SELECT name FROM singer",
            "scores": {"ex": 0.0},
            "system_metadata": {"confidence": 0.4, "signals": {"repairs": 1.0}},
        },
        {
            "id": "c",
            "question": "Gold failed",
            "database": "concert_singer",
            "predicted_sql": "SELECT 1",
            "scores": None,
        },
    ]
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    def reply(messages, **options):
        right = "COUNT" in messages[-1]["content"]
        return ChatResult(
            [Completion("yes" if right else "no", "stop", logprobs=(math.log(0.9),))],
            "scripted",
            10,
            1,
            0.1,
        )

    llm = Replying("", None)
    llm.chat = reply  # type: ignore[method-assign]
    figures = check_run(run, "spider_dev", SelfCheck(llm), tmp_path / "out")
    assert figures["answers_read"] == 2 and figures["auroc_self_check"] == 1.0
    written = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").open()]
    assert [r["id"] for r in written] == ["a", "b", "c"]
    assert written[0]["system_metadata"]["signals"] == {"repairs": 0.0, SIGNAL: 0.9}
    assert written[1]["system_metadata"]["signals"][SIGNAL] == pytest.approx(0.1)
    assert "system_metadata" not in written[2]


@pytest.mark.slow
def test_the_real_model_gives_a_verdict(concert, embedded_llm):
    _, database, _ = concert
    verdict = SelfCheck(embedded_llm).verdict(
        "How many singers are there?", schema_ddl(database), "SELECT COUNT(*) FROM singer"
    )
    assert verdict.word.startswith(("yes", "no")) and verdict.p_yes is not None
    assert 0.0 <= verdict.p_yes <= 1.0
