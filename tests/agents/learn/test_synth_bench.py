"""Synthesis in the benchmark: ``--examples-per-db``, ``--synthesize`` and the almanac
system's synthesis on concert_singer with a scripted model (the real-model run is the
command in ``bench/synthesis.py``)."""

from __future__ import annotations

import argparse
import json

import pytest

from agents.learn.synth import TRANSFORMS, synthetic_experiences
from agents.learn.synth.results import run, same_result
from bench.__main__ import main as bench_main
from bench.datasets import load_dataset
from bench.learn_split import revealed_examples
from bench.synthesis import (
    SYNTHESIS_LOG,
    first_per_database,
    synthesis_transforms,
    write_synthesis,
)
from bench.systems import Prediction, make_system
from indices.embeddings import HashingEmbedder
from tests.agents.scripted import ScriptedLLM
from tests.server.test_job_synthesize import reply


@pytest.fixture(scope="module")
def spider():
    try:
        return load_dataset("spider_dev")
    except FileNotFoundError:
        pytest.skip("Spider dev is not on this machine")


def test_examples_per_db_reveals_the_first_k_of_each_database(spider):
    kept = first_per_database(spider.examples, 3)
    databases = {e.database for e in spider.examples}
    assert len(kept) == 3 * len(databases)
    for name in databases:
        own = [e.id for e in spider.examples if e.database == name]
        assert [e.id for e in kept if e.database == name] == own[:3]
    args = argparse.Namespace(learn_split="dev", examples_per_db=2)
    assert [e.id for e in revealed_examples(spider, args)] == [
        e.id for e in first_per_database(spider.examples, 2)
    ]
    assert revealed_examples(spider, argparse.Namespace(learn_split=None, examples_per_db=2)) == []
    with pytest.raises(ValueError):
        first_per_database(spider.examples, -1)


def test_synthesis_options_need_a_learn_split(tmp_path, capsys):
    base = ["run", "--dataset", "spider_dev", "--system", "almanac", "--limit", "1"]
    for extra in (["--synthesize", "3"], ["--examples-per-db", "3"]):
        assert bench_main([*base, *extra, "--out", str(tmp_path / "out")]) == 2
        assert "need --learn-split" in capsys.readouterr().err


def test_the_almanac_system_synthesizes_from_what_it_was_shown(spider, tmp_path):
    system = make_system("almanac", llm=ScriptedLLM([reply]), embedder=HashingEmbedder())
    concert = [e for e in spider.examples if e.database == "concert_singer"][:3]
    world = next(e for e in spider.examples if e.database == "world_1")
    system.prepare({e.database: e.database_url for e in [*concert, world]})
    for example in [*concert, world]:
        system.observe(example, Prediction(), True)

    reports = system.synthesize(2, per_source=3, databases={"concert_singer"})
    assert set(reports) == {"concert_singer"}  # world_1 is not answered: no synthesis
    store = system.workspace.store
    stored = synthetic_experiences(store)
    assert len(stored) == len(reports["concert_singer"].stored_ids) == 2
    database = system.workspace.databases["concert_singer"]
    for entry in stored:
        back_check = entry.content_resources["synthetic"]["back_check"]
        assert same_result(run(database, back_check["sql"]), run(database, entry.sql or ""))

    totals = write_synthesis(tmp_path, reports)
    written = json.loads((tmp_path / SYNTHESIS_LOG).read_text())
    assert written["totals"] == totals and totals["stored"] == 2
    assert (
        written["databases"]["concert_singer"]["stored_ids"] == reports["concert_singer"].stored_ids
    )


def test_synthesize_transforms_chooses_the_variants_and_refuses_unknown_ones(tmp_path, capsys):
    assert synthesis_transforms(None) == TRANSFORMS
    assert synthesis_transforms("decompose, join,group") == ("group", "join", "decompose")
    with pytest.raises(ValueError, match=r"unknown \['filters'\]"):
        synthesis_transforms("join,filters")
    run = ["run", "--dataset", "spider_dev", "--system", "almanac", "--limit", "1"]
    flags = ["--learn-split", "rest", "--synthesize", "3", "--synthesize-transforms", "nope"]
    assert bench_main([*run, *flags, "--out", str(tmp_path / "out")]) == 2
    assert "--synthesize-transforms: unknown ['nope']" in capsys.readouterr().err


def test_the_almanac_system_synthesizes_only_the_transforms_asked(spider):
    system = make_system("almanac", llm=ScriptedLLM([reply]), embedder=HashingEmbedder())
    concert = [e for e in spider.examples if e.database == "concert_singer"][:3]
    system.prepare({e.database: e.database_url for e in concert})
    for example in concert:
        system.observe(example, Prediction(), True)
    reports = system.synthesize(5, per_source=3, transforms=("group", "join"))
    assert set(reports["concert_singer"].counts) <= {"group", "join"}
    assert reports["concert_singer"].counts  # some variant was made
