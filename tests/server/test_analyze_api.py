"""``POST /v1/analyze`` and its stream on concert_singer with a scripted model: a lookup is
answered as ``/v1/ask`` answers it, a descriptive question is planned, asked through the
chain and written up with its evidence, the stream sends each step, bad input is refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from indices.embeddings import HashingEmbedder
from kb.profile.profiler import ProfileOptions, profile_database
from server.state import build_state
from tests.agents.learn.conftest import SPIDER
from tests.agents.scripted import ScriptedLLM, sql_reply
from tests.server.conftest import Server, make_settings, running_server
from tests.server.test_confidence_api import OneTier

DATABASE = "concert_singer"
TARGET = SPIDER / DATABASE / f"{DATABASE}.sqlite"
QUESTION = "Compare the number of singers by country"
BY_COUNTRY = "SELECT country, count(*) FROM singer GROUP BY country"
SQL = {
    QUESTION: BY_COUNTRY,
    "How many singers are there in each country?": BY_COUNTRY,
    "How many singers do we have?": "SELECT count(*) FROM singer",
}


def analyst_model(messages: list[dict[str, str]], _options: dict[str, Any]) -> str:
    """Plans one sub-question, writes SQL by question, and a narrative citing q1."""
    prompt = messages[-1]["content"]
    if "Split the analyst's question" in prompt:
        steps = [{"question": "How many singers are there in each country?", "purpose": "split"}]
        return json.dumps({"steps": steps})
    if "Query results:" in prompt:
        finding = {"text": "France has the most singers: 4.", "evidence": ["q1"]}
        return json.dumps(
            {"short_answer": "Most singers are French.", "findings": [finding], "caveats": []}
        )
    for question, sql in SQL.items():
        if question in prompt:
            return sql_reply(sql)
    return sql_reply("SELECT 1")


@pytest.fixture()
def server(tmp_path) -> Iterator[Server]:
    if not TARGET.is_file():
        pytest.skip(f"benchmark database {TARGET} not found (set ALMANAC_BENCH_DATA)")
    settings = make_settings(
        tmp_path,
        f"sqlite:///{tmp_path / 'knowledge.db'}",
        target_url=f"sqlite:///{TARGET}",
        target_name=DATABASE,
        jobs={"workers": 0},
    )
    llm = OneTier(ScriptedLLM([analyst_model]))
    with ExitStack() as stack:
        state = build_state(settings, embedder=HashingEmbedder(), llms=llm)
        running = stack.enter_context(running_server(state))
        assert state.target is not None
        options = ProfileOptions(progress=False)
        profile_database(state.target, state.store, database_name=DATABASE, options=options)
        yield running


def test_a_lookup_is_answered_by_the_chain(server):
    body = {"question": "How many singers do we have?"}
    reply = server.request("POST", "/v1/analyze", "analyst", json=body)
    assert reply.status_code == 200, reply.text
    answer = reply.json()
    assert answer["type"] == "lookup" and answer["lookup"]["rows"] == [[6]]
    assert answer["plan"] is None and [e["sql"] for e in answer["evidence"]] == [
        "SELECT count(*) FROM singer"
    ]


def test_a_descriptive_question_is_planned_asked_and_written_up(server):
    reply = server.request("POST", "/v1/analyze", "analyst", json={"question": QUESTION})
    assert reply.status_code == 200, reply.text
    answer = reply.json()
    assert answer["type"] == "descriptive" and answer["sql_calls"] >= 2
    assert [e["sql"] for e in answer["evidence"]][:2] == [BY_COUNTRY, BY_COUNTRY]
    assert ["France", 4] in answer["evidence"][0]["rows"]
    assert answer["short_answer"] == "Most singers are French."
    (finding,) = answer["findings"]
    assert finding["evidence"] == ["q1"] and finding["chart"]["mark"]  # a Vega-Lite spec


def test_the_stream_sends_each_step(server):
    body = {"question": QUESTION, "options": {"max_steps": 2}}
    with server.client.stream(
        "POST", "/v1/analyze/stream", json=body, headers=server.headers("analyst")
    ) as reply:
        assert reply.status_code == 200
        text = "".join(reply.iter_text())
    stages = [
        line.removeprefix("event: ") for line in text.splitlines() if line.startswith("event:")
    ]
    assert stages[0] == "typing" and "plan" in stages and "subquestion" in stages
    assert stages[-1] == "final"


def test_bad_requests_are_refused(server):
    empty = server.request("POST", "/v1/analyze", "analyst", json={"question": ""})
    assert empty.status_code == 422
    steps = {"question": QUESTION, "options": {"max_steps": 0}}
    assert server.request("POST", "/v1/analyze", "analyst", json=steps).status_code == 422
    unknown = {"question": QUESTION, "nope": 1}
    assert server.request("POST", "/v1/analyze", "analyst", json=unknown).status_code == 422
    assert (
        server.request("POST", "/v1/analyze", "ops", json={"question": QUESTION}).status_code == 403
    )


def test_the_command_line_analyses_and_draws_charts(tmp_path, monkeypatch, capsys):
    from concurrent.futures import Future

    from agents.pipeline import ModelTier
    from kb.store import KnowledgeStore
    from kb.target.database import Database
    from server.cli import main

    if not TARGET.is_file():
        pytest.skip(f"benchmark database {TARGET} not found (set ALMANAC_BENCH_DATA)")
    url = f"sqlite:///{TARGET}"
    with KnowledgeStore(f"sqlite:///{tmp_path / 'knowledge.db'}") as store, Database(url) as db:
        profile_database(db, store, database_name=DATABASE, options=ProfileOptions(progress=False))
    tiers: Future[list[ModelTier]] = Future()
    tiers.set_result([ModelTier("scripted", ScriptedLLM([analyst_model]))])
    monkeypatch.setattr("server.cli_agents._load_tiers", lambda _settings: tiers)
    monkeypatch.setenv("ALMANAC_EMBEDDER", "none")
    charts = tmp_path / "charts"
    argv = ["--data-dir", str(tmp_path), "analyze", QUESTION, "--db", url]
    assert main([*argv, "--name", DATABASE, "--png-dir", str(charts)]) == 0
    out = capsys.readouterr().out
    assert "Most singers are French." in out and "1. France has the most singers: 4. [q1]" in out
    assert BY_COUNTRY in out and (charts / "finding-1.png").stat().st_size > 1000
    assert main([*argv, "--name", DATABASE, "--json", "--max-steps", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["type"] == "descriptive"
