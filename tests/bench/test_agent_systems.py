"""The LLM systems under benchmark, on the real embedded 0.5B model, and stratified sampling."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from agents.answer import CandidateSummary
from agents.llm.models import TEST_MODEL
from bench.__main__ import main as bench_main
from bench.agent_systems import greedy_alternatives
from bench.datasets import load_dataset
from bench.sampling import stratified_sample
from bench.systems import make_system, system_names


@pytest.fixture(scope="module")
def spider():
    try:
        return load_dataset("spider_dev")
    except FileNotFoundError:
        pytest.skip("Spider dev is not on this machine")


def test_stratified_sample_keeps_difficulty_shares_and_is_seeded(spider):
    sample = stratified_sample(spider, 100)
    assert len(sample) == 100 and len({e.id for e in sample}) == 100
    full = Counter(e.difficulty for e in spider)
    got = Counter(e.difficulty for e in sample)
    for level, n in full.items():
        assert abs(got[level] - 100 * n / len(spider)) <= 1
    assert len({e.database for e in sample}) >= 15
    assert [e.id for e in stratified_sample(spider, 100)] == [e.id for e in sample]
    assert [e.id for e in stratified_sample(spider, 100, seed=1)] != [e.id for e in sample]
    with pytest.raises(ValueError):
        stratified_sample(spider, 0)


def test_every_llm_system_is_registered():
    names = {"ddl-only", "vanna-style", "almanac", "almanac-tts", "almanac-adaptive"}
    names |= {"almanac-cascade", "almanac-cascade-adaptive"}
    assert names <= set(system_names())


@pytest.mark.parametrize("name", ["ddl-only", "vanna-style", "almanac"])
def test_llm_systems_answer_with_the_embedded_model(spider, name):
    system = make_system(name, model=TEST_MODEL, small_model=TEST_MODEL)
    example = next(e for e in spider if e.question == "How many singers do we have?")
    system.prepare({example.database: example.database_url})
    prediction = system.predict(example, "sqlite")
    assert prediction.sql and "singer" in prediction.sql.lower(), prediction
    if name == "vanna-style":
        system.observe(example, prediction, True)
        assert system.memory.related("How many singers?", example.database).pairs


def test_learn_split_reveals_train_questions_before_the_test(tmp_path, capsys):
    """The CLI end to end: AutoFin-like flow on GeoQuery with two test questions."""
    code = bench_main(
        [
            "run",
            "--dataset",
            "geoquery",
            "--system",
            "almanac",
            "--split",
            "test",
            "--limit",
            "2",
            "--learn-split",
            "train",
            "--model",
            TEST_MODEL,
            "--out",
            str(tmp_path / "out"),
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "almanac on geoquery: 2/2 scored" in printed
    assert (tmp_path / "out" / "report.md").exists()


def test_each_tier_greedy_candidate_becomes_an_alternative():
    def candidate(sql: str, tier: str = "", sample: int = 0) -> CandidateSummary:
        return CandidateSummary(sql=sql, tier=tier, sample=sample)

    assert greedy_alternatives([candidate("SELECT 1")]) == {}  # n = 1: nothing to compare
    voted = [candidate("SELECT 1"), candidate("SELECT 2", "", 1), candidate("SELECT 3", "", 2)]
    assert greedy_alternatives(voted) == {"greedy": "SELECT 1"}
    cascade = [
        candidate("SELECT 1", "0.5b"),
        candidate("SELECT 2", "0.5b", 1),
        candidate("SELECT 3", "1.5b"),
        candidate("SELECT 4", "1.5b", 1),
        candidate("SELECT 5", "1.5b:plain"),
    ]
    assert greedy_alternatives(cascade) == {"greedy:0.5b": "SELECT 1", "greedy:1.5b": "SELECT 3"}


def test_learn_split_rest_reveals_the_questions_not_asked(tmp_path, monkeypatch):
    """``--learn-split rest``: the other questions of the asked databases, never the asked."""
    import bench.__main__ as bench_cli

    seen: dict[str, list] = {}

    def record(system, revealed, args, out_dir):
        seen["revealed"] = revealed

    monkeypatch.setattr(bench_cli, "learn_split", record)
    code = bench_main(
        [
            "run",
            "--dataset",
            "spider_dev",
            "--system",
            "gold",
            "--stratify",
            "6",
            "--learn-split",
            "rest",
            "--out",
            str(tmp_path / "out"),
        ]
    )
    assert code == 0
    asked = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").open()]
    asked_ids = {r["id"] for r in asked}
    revealed = seen["revealed"]
    assert len(asked_ids) == 6 and revealed
    assert not asked_ids & {e.id for e in revealed}
    assert {e.database for e in revealed} == {r["database"] for r in asked}


def test_exclude_stratified_asks_only_questions_the_named_samples_do_not(spider, tmp_path, capsys):
    """A calibrator fitted on the stratified 60 and 120 is measured on questions it never saw."""
    code = bench_main(
        ["run", "--dataset", "spider_dev", "--system", "gold", "--stratify", "20",
         "--exclude-stratified", "120", "--exclude-stratified", "60", "--out", str(tmp_path)]
    )  # fmt: skip

    assert code == 0
    asked = {json.loads(line)["id"] for line in (tmp_path / "results.jsonl").open()}
    seen = {e.id for e in stratified_sample(spider, 120)}
    assert len(asked) == 20 and not asked & seen
    assert {e.id for e in stratified_sample(spider, 60)} <= seen  # the samples nest
    manifest = json.loads((tmp_path / "run.json").read_text())
    assert manifest["exclude_stratified"] == [60, 120]
    assert manifest["questions"] == 20

    code = bench_main(
        ["run", "--dataset", "spider_dev", "--system", "gold", "--exclude-stratified", "5000",
         "--out", str(tmp_path / "none")]
    )  # fmt: skip
    assert code == 2 and "--exclude-stratified [5000] leaves no question" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()


def test_exclude_run_asks_only_questions_the_recorded_runs_did_not(spider, tmp_path, capsys):
    """After a calibrator is fitted on recorded runs, measure it on questions none asked."""
    first = tmp_path / "first"
    run = ["run", "--dataset", "spider_dev", "--system", "gold", "--stratify", "10"]
    assert bench_main([*run, "--out", str(first)]) == 0
    assert bench_main([*run, "--exclude-run", str(first), "--out", str(tmp_path / "next")]) == 0

    def ids(folder):
        return {json.loads(line)["id"] for line in (folder / "results.jsonl").open()}

    assert len(ids(tmp_path / "next")) == 10 and not ids(first) & ids(tmp_path / "next")
    manifest = json.loads((tmp_path / "next" / "run.json").read_text())
    assert manifest["exclude_run"] == [str(first)]

    missing = ["--exclude-run", str(tmp_path / "nothing"), "--out", str(tmp_path / "x")]
    assert bench_main([*run, *missing]) == 2
    assert "no results.jsonl there" in capsys.readouterr().err


def test_learn_split_rest_holds_back_same_sql_paraphrases_of_the_asked(tmp_path):
    """Spider dev pairs paraphrases under one gold SQL: revealing one would answer the other."""
    from bench.learn_split import rest_of

    spider = load_dataset("spider_dev")
    asked = stratified_sample(spider, 30)
    revealed = rest_of(spider, asked)

    def plain(sql):
        return " ".join(sql.lower().split()).rstrip("; ")

    answers = {(e.database, plain(e.canonical_sql)) for e in asked.examples}
    assert revealed and not any((e.database, plain(e.canonical_sql)) in answers for e in revealed)
    # a paraphrase exists for most asked questions: they were held back, not absent
    others = [e for e in spider.examples if e.id not in {a.id for a in asked.examples}]
    paraphrases = [e for e in others if (e.database, plain(e.canonical_sql)) in answers]
    assert len(paraphrases) >= 10
    assert {e.id for e in revealed}.isdisjoint({e.id for e in paraphrases})


def test_shuffle_asks_in_a_seeded_order_and_records_it(tmp_path):
    """``--shuffle SEED``: a stream in a seeded random order, the same for the same seed."""
    orders = []
    for out in ("a", "b"):
        argv = ["run", "--dataset", "geoquery", "--system", "gold", "--split", "train"]
        argv += ["--limit", "12", "--shuffle", "3", "--out", str(tmp_path / out)]
        assert bench_main(argv) == 0
        rows = [json.loads(line) for line in (tmp_path / out / "results.jsonl").open()]
        orders.append([r["id"] for r in sorted(rows, key=lambda r: r["position"])])
        assert json.loads((tmp_path / out / "run.json").read_text())["shuffle"] == 3
    file_order = [e.id for e in load_dataset("geoquery").filter(split="train", limit=12).examples]
    assert orders[0] == orders[1] and sorted(orders[0]) == sorted(file_order)
    assert orders[0] != file_order
