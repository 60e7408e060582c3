"""The benchmark's mining arm mines query templates and activates them (``--mine-every``):
on a labeled GeoQuery stream with a scripted model that gets one question wrong, the round
after three questions of one shape makes a template, and the next question of that shape is
answered from it with no model call; the run without mining leaves it to the model."""

from __future__ import annotations

import json

import pytest

from bench.datasets import Dataset, Example
from bench.datasets.registry import default_data_root
from bench.run import RunConfig, Runner, load_mining
from bench.stream_mining import StreamMiningOptions
from bench.systems import make_system
from indices.embeddings import HashingEmbedder
from tests.agents.scripted import ScriptedLLM, sql_reply

GEOQUERY = default_data_root() / "geoquery" / "geography-db.added-in-2020.sqlite"
POPULATION = "SELECT population FROM state WHERE state_name = '{}'"
HAWAII = "what is the population of hawaii"
STREAM = [
    (f"what is the population of {state}", POPULATION.format(state))
    for state in ("alaska", "texas", "ohio", "hawaii")
]
GOLD = dict(STREAM)


@pytest.fixture
def geo_stream() -> Dataset:
    if not GEOQUERY.is_file():
        pytest.skip(f"GeoQuery not found at {GEOQUERY} (set ALMANAC_BENCH_DATA)")
    url = f"sqlite:///{GEOQUERY}"
    examples = [
        Example(id=f"s{i}", question=q, database="geoquery", database_url=url, gold_sql=[sql])
        for i, (q, sql) in enumerate(STREAM)
    ]
    return Dataset(name="geo-templates", examples=examples, databases={"geoquery": url})


def run_stream(dataset: Dataset, out, mining: StreamMiningOptions | None):
    asked: list[str] = []

    def model(messages, _options) -> str:
        """Right on every question but Hawaii's, whose city it takes for the state."""
        question = messages[-1]["content"].rsplit("### Question", 1)[-1].strip()
        asked.append(question)
        if question == HAWAII:
            return sql_reply("SELECT population FROM city WHERE city_name = 'honolulu'")
        return sql_reply(GOLD.get(question, "SELECT 1"))

    system = make_system("almanac", llm=ScriptedLLM([model]), embedder=HashingEmbedder())
    system.prepare(dataset.databases)
    if mining is not None:
        system.enable_mining(mining)
    config = RunConfig(
        out_dir=out, stream="labeled", mine_every=mining.every if mining else 0, timeout_s=600
    )
    out.mkdir(parents=True, exist_ok=True)
    (out / "run.json").write_text(json.dumps({"stream": "labeled"}))
    results = Runner(dataset, system, config).run()
    return system, {r.question: r.scores["ex"] for r in results}, asked


def test_the_mining_arm_answers_from_a_mined_template(geo_stream, tmp_path):
    _, plain, plain_asked = run_stream(geo_stream, tmp_path / "plain", None)
    system, mined, mined_asked = run_stream(
        geo_stream, tmp_path / "mined", StreamMiningOptions(every=3)
    )
    assert plain[HAWAII] == 0.0 and HAWAII in plain_asked  # the examples alone do not help
    assert mined[HAWAII] == 1.0 and HAWAII not in mined_asked
    (first, *_) = load_mining(tmp_path / "mined")
    assert first["after_question"] == 3 and first["activated"] >= 1
    templates = [
        e
        for e in system.workspace.store.iterate(type="knowledge", source="auto")
        if e.content_resources.get("kind") == "template"
    ]
    assert len(templates) == 1 and templates[0].metadata["mining"]["status"] == "active"
    assert templates[0].content_resources["sql"] == POPULATION.format("x").replace("'x'", ":slot0")


def test_template_support_zero_mines_no_template_and_a_negative_one_is_refused(
    geo_stream, tmp_path
):
    options = StreamMiningOptions(every=3, template_support=0)
    system, mined, asked = run_stream(geo_stream, tmp_path / "off", options)
    assert mined[HAWAII] == 0.0 and HAWAII in asked  # no template: the model answered
    assert not [
        e
        for e in system.workspace.store.iterate(type="knowledge", source="auto", active=None)
        if e.content_resources.get("kind") == "template"
    ]
    with pytest.raises(ValueError, match="template support -1"):
        StreamMiningOptions(every=3, template_support=-1)
