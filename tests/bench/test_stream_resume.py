"""A resumed stream run replays what its answered questions taught before going on: the new
store holds their experiences again and the mining rounds due among them run again, unrecorded
twice (otherwise the rest of the stream would learn from a store that forgot them)."""

from __future__ import annotations

import json

from bench.run import RunConfig, Runner, load_mining
from bench.stream_mining import StreamMiningOptions
from bench.systems import make_system
from indices.embeddings import HashingEmbedder
from tests.agents.scripted import ScriptedLLM
from tests.bench.test_stream_mining import (
    NC_CAPITAL,
    STREAM,
    ex_of,
    geo_stream,  # noqa: F401 (fixture)
    model_reading_knowledge,
    stream_run,
)
from ukf import ExperienceUKF

ANSWERED = 3  # the run stopped after 3 questions: one mining round (after 2) was due


def _experiences(system, *, labeled: bool) -> int:
    return sum(
        1
        for e in system.workspace.store.iterate(type="experience")
        if isinstance(e, ExperienceUKF) and e.labeled is labeled
    )


def test_a_resumed_stream_learns_from_the_questions_answered_before(geo_stream, tmp_path):  # noqa: F811
    full_system, full = stream_run(geo_stream, tmp_path / "full", StreamMiningOptions(every=2))
    assert ex_of(full)[NC_CAPITAL] == 1.0  # taught by the round after question 2

    out = tmp_path / "resumed"
    out.mkdir()
    lines = (tmp_path / "full" / "results.jsonl").read_text().splitlines()
    (out / "results.jsonl").write_text("\n".join(lines[:ANSWERED]) + "\n")
    rounds = (tmp_path / "full" / "mining.jsonl").read_text().splitlines()
    (out / "mining.jsonl").write_text(rounds[0] + "\n")  # the round after question 2
    (out / "run.json").write_text(json.dumps({"stream": "labeled"}))

    llm = ScriptedLLM([model_reading_knowledge])
    system = make_system("almanac", llm=llm, embedder=HashingEmbedder())
    system.prepare(geo_stream.databases)
    system.enable_mining(StreamMiningOptions(every=2))
    config = RunConfig(out_dir=out, stream="labeled", mine_every=2, timeout_s=600)
    resumed = Runner(geo_stream, system, config).run()

    assert len(llm.calls) == len(STREAM) - ANSWERED  # no answered question asked again
    assert ex_of(resumed)[NC_CAPITAL] == 1.0  # "NC" was mined again from the replayed stream
    assert [r["after_question"] for r in load_mining(out)] == [2, 4, 6]  # none twice
    for labeled in (True, False):  # the gold of each, and each question as logged
        assert _experiences(system, labeled=labeled) == len(STREAM)
        assert _experiences(full_system, labeled=labeled) == len(STREAM)
