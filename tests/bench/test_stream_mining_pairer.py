"""``--mine-llm-pairer``: a stream's mining rounds pair what alignment leaves with the
system's own model (scripted here: it answers the pairing prompt with JSON and every question
with its gold SQL), and the round records the pairer's calls; without it, nothing is paired."""

from __future__ import annotations

import json

import pytest

from agents.learn.mine.labeled import kind_of
from bench.datasets import Dataset, Example
from bench.run import RunConfig, Runner, load_mining
from bench.stream_mining import StreamMiningOptions
from bench.systems import make_system
from indices.embeddings import HashingEmbedder
from tests.agents.scripted import ScriptedLLM, sql_reply
from tests.bench.test_stream_mining import GEOQUERY

STREAM = [
    ("what is the size of texas", "SELECT area FROM state WHERE state_name = 'texas'"),
    ("how many people live in ohio", "SELECT population FROM state WHERE state_name = 'ohio'"),
]
GOLD = dict(STREAM)


def model(messages, _options) -> str:
    """Pairs "size" with the first item it is offered; answers questions with their gold."""
    if "which words of the question name" in messages[0]["content"]:
        return json.dumps({"pairs": [{"item": "i1", "phrase": "size"}]})
    question = messages[-1]["content"].rsplit("### Question", 1)[-1].strip()
    return sql_reply(GOLD.get(question, "SELECT 1"))


@pytest.fixture
def stream() -> Dataset:
    if not GEOQUERY.is_file():
        pytest.skip(f"GeoQuery not found at {GEOQUERY} (set ALMANAC_BENCH_DATA)")
    url = f"sqlite:///{GEOQUERY}"
    examples = [
        Example(id=f"p{i}", question=q, database="geoquery", database_url=url, gold_sql=[sql])
        for i, (q, sql) in enumerate(STREAM)
    ]
    return Dataset(name="geo-pairer", examples=examples, databases={"geoquery": url})


@pytest.mark.parametrize("pairer", [True, False])
def test_the_stream_pairs_with_the_systems_model_only_when_asked(stream, tmp_path, pairer):
    system = make_system("almanac", llm=ScriptedLLM([model]), embedder=HashingEmbedder())
    system.prepare(stream.databases)
    system.enable_mining(StreamMiningOptions(every=1, llm_pairer=pairer))
    out = tmp_path / "run"
    out.mkdir()
    (out / "run.json").write_text(json.dumps({"stream": "labeled"}))
    Runner(stream, system, RunConfig(out_dir=out, stream="labeled", mine_every=1)).run()

    first = load_mining(out)[0]
    size = [
        e
        for e in system.workspace.store.iterate(source="auto", active=None, type="synonym")
        if kind_of(e) == "column_synonym" and e.name == "size"
    ]
    if pairer:
        assert first["pairer_calls"] == 1 and first["unpaired"] == 0
        (entry,) = size
        assert entry.content == "size means state.area"
        assert entry.metadata["mining"]["how"] == "llm"
    else:
        assert first["pairer_calls"] == 0 and first["unpaired"] >= 1 and not size
