"""Mining inside a benchmark stream (``--mine-every``) on GeoQuery with a scripted model whose
SQL depends on the knowledge in its prompt: rounds happen, candidates become active and the
next question's prompt has them, the gate decides them, and the comparison report plots the
runs with and without mining; once end to end with the embedded 0.5B model."""

from __future__ import annotations

import json

import pytest

from agents.llm.models import TEST_MODEL
from bench.__main__ import main as bench_main
from bench.compare import compare_curves, write_comparison
from bench.datasets import Dataset, Example
from bench.datasets.registry import default_data_root
from bench.run import RunConfig, Runner, load_mining, load_results
from bench.stream_mining import StreamMiningOptions
from bench.systems import make_system
from indices.embeddings import HashingEmbedder
from tests.agents.scripted import ScriptedLLM, ShareCalibrator, sql_reply

GEOQUERY = default_data_root() / "geoquery" / "geography-db.added-in-2020.sqlite"
NC_CAPITAL = "what is the capital of NC"
NC_MEANS = "\"NC\" means state.state_name = 'north carolina'"
# in stream order: the NC question teaches what NC means; the capital question needs it
STREAM = [
    (
        "how many people live in NC",
        "SELECT population FROM state WHERE state_name = 'north carolina'",
    ),
    ("how many people live in houston", "SELECT population FROM city WHERE city_name = 'houston'"),
    ("what is the capital of texas", "SELECT capital FROM state WHERE state_name = 'texas'"),
    ("how many people live in dallas", "SELECT population FROM city WHERE city_name = 'dallas'"),
    (NC_CAPITAL, "SELECT capital FROM state WHERE state_name = 'north carolina'"),
    ("what is the capital of ohio", "SELECT capital FROM state WHERE state_name = 'ohio'"),
]
GOLD = dict(STREAM)


def model_reading_knowledge(messages, _options) -> str:
    """Right on every question, except the NC capital unless told what NC means."""
    text = messages[-1]["content"]
    question = text.rsplit("### Question", 1)[-1].strip()
    knowledge = text.split("### Knowledge", 1)[-1] if "### Knowledge" in text else ""
    if question == NC_CAPITAL and NC_MEANS not in knowledge:
        return sql_reply("SELECT capital FROM state WHERE state_name = 'nc'")
    return sql_reply(GOLD.get(question, "SELECT 1"))


@pytest.fixture
def geo_stream() -> Dataset:
    if not GEOQUERY.is_file():
        pytest.skip(f"GeoQuery not found at {GEOQUERY} (set ALMANAC_BENCH_DATA)")
    url = f"sqlite:///{GEOQUERY}"
    examples = [
        Example(id=f"s{i}", question=q, database="geoquery", database_url=url, gold_sql=[sql])
        for i, (q, sql) in enumerate(STREAM)
    ]
    return Dataset(name="geo-stream", examples=examples, databases={"geoquery": url})


def stream_run(dataset: Dataset, out, mining: StreamMiningOptions | None):
    llm = ScriptedLLM([model_reading_knowledge])
    system = make_system("almanac", llm=llm, embedder=HashingEmbedder())
    system.prepare(dataset.databases)
    if mining is not None:
        system.enable_mining(mining)
    config = RunConfig(
        out_dir=out, stream="labeled", mine_every=mining.every if mining else 0, timeout_s=600
    )
    (out / "run.json").parent.mkdir(parents=True, exist_ok=True)
    (out / "run.json").write_text(json.dumps({"stream": "labeled"}))
    return system, Runner(dataset, system, config).run()


def ex_of(results) -> dict[str, float]:
    return {r.question: r.scores["ex"] for r in results}


def test_mined_knowledge_is_active_for_the_next_question(geo_stream, tmp_path):
    plain_system, plain = stream_run(geo_stream, tmp_path / "plain", None)
    mined_system, mined = stream_run(geo_stream, tmp_path / "mined", StreamMiningOptions(every=2))

    assert ex_of(plain)[NC_CAPITAL] == 0.0  # the worked examples alone do not say it
    assert ex_of(mined)[NC_CAPITAL] == 1.0  # the round after question 2 mined "NC"
    rounds = load_mining(tmp_path / "mined")
    assert [r["after_question"] for r in rounds] == [2, 4, 6]
    assert rounds[0]["experiences"] == 2 and rounds[0]["inserted"] > 0
    assert rounds[0]["activated"] == rounds[0]["inserted"] and not rounds[0]["gated"]
    assert rounds[0]["waiting"] == 0 and rounds[0]["seconds"] >= rounds[0]["mine_seconds"]
    nc = [
        e
        for e in mined_system.workspace.store.iterate(source="auto")
        if e.name == "NC" and e.type == "synonym"
    ]
    assert nc and nc[0].metadata["mining"]["status"] == "active"
    assert not list(plain_system.workspace.store.iterate(source="auto", active=None))
    # mining time is not a question's latency: the round is recorded beside the results
    assert all(r.latency_s < 60 for r in mined)

    path = write_comparison([tmp_path / "plain", tmp_path / "mined"], tmp_path / "cmp", window=2)
    text = path.read_text()
    assert "| plain |" in text and "| mined |" in text and "learning_curves.png" in text
    assert (tmp_path / "cmp" / "learning_curves.png").read_bytes()[:4] == b"\x89PNG"
    count, curves = compare_curves([tmp_path / "plain", tmp_path / "mined"], window=2)
    assert count == len(STREAM)
    assert curves[1].figures.final_ex > curves[0].figures.final_ex
    assert curves[1].mining_rounds == 3 and curves[0].mining_rounds == 0


def test_the_gate_decides_candidates_on_questions_seen_before(geo_stream, tmp_path):
    options = StreamMiningOptions(every=2, gate=True, gate_held=4)
    _, results = stream_run(geo_stream, tmp_path / "gated", options)
    rounds = load_mining(tmp_path / "gated")
    first, second = rounds[0], rounds[1]
    # the first round has no earlier question to hold: its candidates wait
    assert first["gated"] and first["activated"] == 0 and first["waiting"] == first["inserted"]
    assert not first["gate_runs"]
    # the second round gates them on the questions seen since (not their sources)
    jobs = {run["job_id"] for run in second["gate_runs"]}
    assert "stream-1" in jobs
    run = next(r for r in second["gate_runs"] if r["job_id"] == "stream-1")
    assert run["held"] >= 1 and run["activated"] >= 1 and run["rejected"] == 0
    assert run["final_ex"] >= run["baseline_ex"]
    assert ex_of(results)[NC_CAPITAL] == 1.0


OHIO = "what is the capital of ohio"
OHIO_SAMPLES = [
    "SELECT capital FROM state WHERE state_name = 'ohio'",
    "SELECT state_name FROM state WHERE capital = 'columbus'",
    "SELECT COUNT(*) FROM river",
]


def unsure_on_ohio():
    """The knowledge-reading model, whose samples disagree on the Ohio question (the first
    answer right, the next ones cycling through other queries)."""
    ohio_calls = []

    def reply(messages, options) -> str:
        if messages[-1]["content"].rsplit("### Question", 1)[-1].strip() == OHIO:
            ohio_calls.append(1)
            return sql_reply(OHIO_SAMPLES[(len(ohio_calls) - 1) % len(OHIO_SAMPLES)])
        return model_reading_knowledge(messages, options)

    return reply


def test_an_unlabeled_stream_mines_what_the_vote_is_sure_of(geo_stream, tmp_path):
    order = [0, 1, 2, 5, 4, 3]  # NC, Houston, Texas, Ohio; then the NC capital
    dataset = Dataset(
        name="geo-unlabeled",
        examples=[geo_stream.examples[i] for i in order],
        databases=geo_stream.databases,
    )
    runs = {}
    for name, every in (("plain", 0), ("mined", 4)):
        system = make_system(
            "almanac", llm=ScriptedLLM([unsure_on_ohio()]), embedder=HashingEmbedder()
        )
        system.calibrator = ShareCalibrator()  # the vote's confidence: its share
        system.prepare(dataset.databases)
        if every:
            system.enable_mining(StreamMiningOptions(every=every))
        config = RunConfig(out_dir=tmp_path / name, stream="unlabeled", mine_every=every)
        runs[name] = (system, Runner(dataset, system, config).run())

    assert ex_of(runs["plain"][1])[NC_CAPITAL] == 0.0
    assert ex_of(runs["mined"][1])[NC_CAPITAL] == 1.0
    (first, *_) = load_mining(tmp_path / "mined")
    assert first["after_question"] == 4 and first["experiences"] == 4
    assert first["vote"]["asked"] == 4
    assert (first["vote"]["kept"], first["vote"]["refused"]) == (3, 1)
    assert first["vote"]["refused_by"] == {"low agreement": 1}
    store = runs["mined"][0].workspace.store
    mined = list(store.iterate(source="auto"))
    assert mined and {e.metadata["mining"]["trust"] for e in mined} == {"unlabeled"}
    # the logged experiences stay unlabeled: nothing is shown as verified
    logged = [e for e in store.iterate(type="experience") if e.content_resources.get("answers")]
    assert len(logged) == len(dataset) and not any(e.labeled or e.verified for e in logged)


@pytest.mark.slow
def test_stream_with_mining_end_to_end_with_the_embedded_model(tmp_path, capsys):
    """The CLI, the 0.5B model: 4 train questions revealed and mined once, then a labeled
    stream of 4 test questions mining every 2; the comparison with a run without mining."""
    if not GEOQUERY.is_file():
        pytest.skip(f"GeoQuery not found at {GEOQUERY}")
    common = ["run", "--dataset", "geoquery", "--system", "almanac", "--model", TEST_MODEL]
    common += ["--drop-failing-gold", "--split", "test", "--limit", "4", "--stream", "labeled"]
    mined, plain = tmp_path / "mined", tmp_path / "plain"
    args = [*common, "--mine-every", "2", "--learn-split", "train", "--out", str(mined)]
    assert bench_main(args) == 0
    assert bench_main([*common, "--learn-split", "train", "--out", str(plain)]) == 0
    rounds = load_mining(mined)
    assert [r["phase"] for r in rounds] == ["learn-split", "stream", "stream"]
    assert rounds[0]["experiences"] > 500 and rounds[0]["inserted"] > 0
    assert rounds[0]["activated"] == rounds[0]["inserted"]
    assert len(load_results(mined / "results.jsonl")) == 4
    report = (mined / "report.md").read_text()
    assert "## Mining rounds" in report and "EX of the first 4 questions" in report
    assert bench_main(["compare", str(plain), str(mined), "--out", str(tmp_path / "cmp")]) == 0
    printed = capsys.readouterr().out
    assert "Learning curves over 4 questions" in printed
    assert (tmp_path / "cmp" / "learning_curves.png").exists()
