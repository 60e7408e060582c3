"""``--learn-split train --learn-unlabeled`` (the train questions revealed without their SQL,
learned by the vote), ``--learn-limit`` and ``--no-knowledge-pack`` on GeoQuery: with a
scripted model whose SQL depends on the knowledge in its prompt (the orchestration), and once
end to end through the command line with the embedded 0.5B model."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing

import pytest

from bench.__main__ import _enable_mining
from bench.__main__ import main as bench_main
from bench.agent_workspace import KNOWLEDGE_PACK, AgentWorkspace
from bench.cli_parser import build_parser
from bench.datasets import Dataset, Example
from bench.learn_split import check_learn_options, learn_split, rest_of, revealed_examples
from bench.run import RunConfig, Runner, load_mining, load_results, write_run_manifest
from bench.systems import make_system
from indices.embeddings import HashingEmbedder
from tests.agents.scripted import ScriptedLLM, ShareCalibrator
from tests.bench.test_stream_mining import GEOQUERY, OHIO, STREAM, unsure_on_ohio
from ukf import ExperienceUKF, KnowledgeUKF

MARK = "GOLD_ONLY_MARK"  # in every revealed gold SQL: it must reach neither store nor prompt
TRAIN = [0, 1, 2, 5]  # NC (teaches what NC means), Houston, Texas, Ohio (the vote disagrees)


@pytest.fixture
def geo() -> Dataset:
    """Four train questions whose gold SQL carries :data:`MARK`, then the NC capital."""
    if not GEOQUERY.is_file():
        pytest.skip(f"GeoQuery not found at {GEOQUERY} (set ALMANAC_BENCH_DATA)")
    url = f"sqlite:///{GEOQUERY}"

    def example(i: int, split: str, mark: bool) -> Example:
        question, sql = STREAM[i]
        gold = f"{sql} -- {MARK} {i}" if mark else sql
        return Example(
            id=f"{split}{i}", question=question, database="geoquery", database_url=url,
            gold_sql=[gold], split=split,
        )  # fmt: skip

    examples = [example(i, "train", True) for i in TRAIN] + [example(4, "test", False)]
    return Dataset(name="geo-learn", examples=examples, databases={"geoquery": url})


def arguments(*extra: str):
    common = ["run", "--dataset", "geo", "--system", "almanac", "--split", "test"]
    args = build_parser().parse_args([*common, *extra])
    check_learn_options(args)
    return args


def learn_then_answer(dataset: Dataset, out, *extra: str):
    """What ``python -m bench run ... --learn-split train EXTRA`` does, with the scripted
    model: (system, its model, the test results, what was learned)."""
    args = arguments("--learn-split", "train", *extra)
    llm = ScriptedLLM([unsure_on_ohio()])
    system = make_system("almanac", llm=llm, embedder=HashingEmbedder())
    system.calibrator = ShareCalibrator()  # the vote's confidence: its share
    system.prepare(dataset.databases)
    if args.mine_every:
        _enable_mining(system, args)
    write_run_manifest(out, {"dataset": dataset.name}, fresh=True)
    learned = learn_split(system, revealed_examples(dataset, args), args, out)
    test = dataset.filter(split="test")
    results = Runner(test, system, RunConfig(out_dir=out, timeout_s=600)).run()
    return system, llm, results, learned


def test_unlabeled_train_questions_teach_through_the_vote_alone(geo, tmp_path):
    unlabeled = ("--learn-unlabeled", "--mine-every", "25", "--mine-vote-samples", "5")
    system, llm, results, learned = learn_then_answer(geo, tmp_path / "u", *unlabeled)
    plain = make_system("almanac", llm=ScriptedLLM([unsure_on_ohio()]), embedder=HashingEmbedder())
    plain.prepare(geo.databases)
    baseline = Runner(geo.filter(split="test"), plain, RunConfig(out_dir=tmp_path / "p")).run()
    assert [r.scores["ex"] for r in baseline] == [0.0]  # NC unknown without the stream
    assert [r.scores["ex"] for r in results] == [1.0]  # mined from the vote: NC means ...

    # the vote alone: each train question asked once, with 5 samples, no greedy answer first
    asked = [m[-1]["content"].rsplit("### Question", 1)[-1].strip() for m, _ in llm.calls]
    for i in TRAIN:
        assert asked.count(STREAM[i][0]) == 5, STREAM[i][0]
    assert learned["vote"] == {
        "asked": 4, "remembered": 0, "kept": 3, "refused": 1,
        "refused_by": {"low agreement": 1},
    }  # fmt: skip
    assert learned["revealed"] == {
        "split": "train",
        "questions": 4,
        "gold_sql": False,
        "limit": None,
    }
    assert learned["activated"] > 0

    # no gold SQL anywhere: not in the store, not in a prompt
    store = system.workspace.store
    assert not [e.id for e in store.iterate() if MARK in e.to_json()]
    assert not [m for m, _ in llm.calls if MARK in json.dumps(m)]
    revealed = [e for e in store.iterate(type="experience") if isinstance(e, ExperienceUKF)]
    revealed = [
        e for e in revealed if str(e.content_resources.get("example", "")).startswith("train")
    ]
    assert sorted(e.question for e in revealed) == sorted(STREAM[i][0] for i in TRAIN)
    for experience in revealed:
        assert experience.sql is None and not (experience.labeled or experience.verified)
        assert experience.metadata["vote"]["samples"] == 5
    ohio = next(e for e in revealed if e.question == OHIO)
    assert ohio.metadata["vote"]["share"] < 0.8
    mined = list(store.iterate(source="auto"))
    assert mined and {e.metadata["mining"]["trust"] for e in mined} == {"unlabeled"}
    assert not {e.metadata["mining"].get("miner") for e in mined} - {"unlabeled"}
    assert not any(getattr(e, "verified", False) for e in mined)

    # the records: mining.jsonl's round and run.json
    (round_,) = load_mining(tmp_path / "u")
    assert round_["phase"] == "learn-split" and round_["revealed"]["gold_sql"] is False
    assert round_["vote"]["kept"] == 3 and round_["experiences"] == 4
    manifest = json.loads((tmp_path / "u" / "run.json").read_text())
    assert manifest["learned"]["vote"]["kept"] == 3
    # the note does not stop the same run from resuming
    write_run_manifest(tmp_path / "u", {"dataset": geo.name}, fresh=False)


def test_learn_limit_reveals_the_first_k_labeled_or_unlabeled(geo, tmp_path):
    system, _, results, learned = learn_then_answer(geo, tmp_path / "l", "--learn-limit", "2")
    assert learned == {"revealed": {"split": "train", "questions": 2, "gold_sql": True, "limit": 2}}
    labeled = [e for e in system.workspace.store.iterate(type="experience") if e.labeled]
    assert sorted(e.content_resources["example"] for e in labeled) == ["train0", "train1"]
    assert load_results(tmp_path / "l" / "results.jsonl") == results
    assert json.loads((tmp_path / "l" / "run.json").read_text())["learned"] == learned

    extra = ("--learn-unlabeled", "--mine-every", "5", "--learn-limit", "1")
    _, llm, _, learned = learn_then_answer(geo, tmp_path / "u", *extra)
    assert learned["revealed"]["questions"] == 1 and learned["vote"]["asked"] == 1
    asked = [m[-1]["content"].rsplit("### Question", 1)[-1].strip() for m, _ in llm.calls]
    assert STREAM[1][0] not in asked  # the second train question was not revealed

    asked_set = geo.filter(split="test")
    assert [e.id for e in rest_of(geo, asked_set, 3)] == ["train0", "train1", "train2"]
    assert len(rest_of(geo, asked_set)) == 4


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--learn-unlabeled", "--mine-every", "5"], "need --learn-split"),
        (["--learn-limit", "3"], "need --learn-split"),
        (["--learn-split", "train", "--learn-unlabeled"], "add --mine-every"),
        (["--learn-split", "train", "--learn-limit", "-1"], "at least 0"),
        (
            ["--learn-split", "train", "--learn-unlabeled", "--mine-every", "5", "--mine-gate"],
            "reveals none",
        ),
        (
            ["--learn-split", "train", "--learn-unlabeled", "--mine-every", "5", "--cot"],
            "reveals none",
        ),
        (["--learn-split", "test"], "reveals the gold SQL of 1 asked question(s)"),
    ],
)
def test_learn_options_that_cannot_work_are_refused(extra, message, tmp_path, capsys):
    argv = ["run", "--dataset", "geoquery", "--system", "gold", "--split", "test", "--limit", "1"]
    assert bench_main([*argv, *extra, "--out", str(tmp_path / "out")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_no_knowledge_pack_leaves_the_pack_beside_the_database_out(tmp_path, capsys):
    folder = tmp_path / "db"
    folder.mkdir()
    with closing(sqlite3.connect(folder / "tiny.sqlite")) as connection:
        connection.execute("CREATE TABLE sales (region TEXT, amount REAL)")
        connection.execute("INSERT INTO sales VALUES ('north', 1.5)")
        connection.commit()
    pack = KnowledgeUKF.create("pack-only fact", "caliber A means the audited amounts")
    (folder / KNOWLEDGE_PACK).write_text(pack.to_json() + "\n")
    url = f"sqlite:///{folder / 'tiny.sqlite'}"
    for imported in (True, False):
        workspace = AgentWorkspace(embedder=HashingEmbedder(), knowledge_pack=imported)
        workspace.prepare("tiny", url)
        names = {e.name for e in workspace.store.iterate()}
        assert ("pack-only fact" in names) is imported
        assert "sales" in names  # profiled either way
        workspace.close()
    # the run manifest records it (only when given, so earlier runs resume)
    if not GEOQUERY.is_file():
        pytest.skip("GeoQuery not found")
    argv = ["run", "--dataset", "geoquery", "--system", "gold", "--split", "test", "--limit", "1"]
    for flag, out in (([], "with"), (["--no-knowledge-pack"], "without")):
        assert bench_main([*argv, *flag, "--out", str(tmp_path / out)]) == 0
    manifests = {
        o: json.loads((tmp_path / o / "run.json").read_text()) for o in ("with", "without")
    }
    assert "knowledge_pack" not in manifests["with"]
    assert manifests["without"]["knowledge_pack"] is False


def test_knowledge_files_are_imported_once_beside_or_instead_of_the_pack(tmp_path):
    """``--knowledge FILE``: extracted knowledge answers instead of the hand-written pack."""
    folder = tmp_path / "db"
    folder.mkdir()
    for name in ("one", "two"):
        with closing(sqlite3.connect(folder / f"{name}.sqlite")) as connection:
            connection.execute("CREATE TABLE sales (region TEXT, amount REAL)")
            connection.commit()
    (folder / KNOWLEDGE_PACK).write_text(
        KnowledgeUKF.create("pack-only fact", "from the pack").to_json() + "\n"
    )
    extracted = tmp_path / "extracted.jsonl"
    extracted.write_text(KnowledgeUKF.create("extracted fact", "from a document").to_json() + "\n")
    workspace = AgentWorkspace(
        embedder=HashingEmbedder(), knowledge_pack=False, knowledge_files=(extracted,)
    )
    imports = []
    store_import = workspace.store.import_jsonl
    workspace.store.import_jsonl = lambda path: imports.append(path) or store_import(path)
    for name in ("one", "two", "one"):  # imported after the first database only
        workspace.prepare(name, f"sqlite:///{folder / name}.sqlite")
    assert imports == [extracted]
    names = [e.name for e in workspace.store.iterate()]
    assert "extracted fact" in names and "pack-only fact" not in names
    workspace.close()
    if not GEOQUERY.is_file():
        pytest.skip("GeoQuery not found")
    argv = ["run", "--dataset", "geoquery", "--system", "gold", "--split", "test", "--limit", "1"]
    out = tmp_path / "out"
    assert bench_main([*argv, "--knowledge", str(extracted), "--out", str(out)]) == 0
    assert json.loads((out / "run.json").read_text())["knowledge"] == [str(extracted)]


@pytest.mark.slow
def test_unlabeled_learn_split_end_to_end_with_the_embedded_model(embedded_model_path, tmp_path):
    """The command line, the 0.5B model: 3 GeoQuery train questions revealed without their
    SQL, each voted on once with 3 samples and mined where the vote agrees; then 2 test
    questions."""
    if not GEOQUERY.is_file():
        pytest.skip(f"GeoQuery not found at {GEOQUERY}")
    out = tmp_path / "out"
    argv = ["run", "--dataset", "geoquery", "--system", "almanac"]
    argv += ["--model", str(embedded_model_path), "--drop-failing-gold", "--split", "test"]
    argv += ["--limit", "2", "--learn-split", "train", "--learn-unlabeled", "--learn-limit", "3"]
    argv += ["--mine-every", "25", "--mine-vote-samples", "3", "--out", str(out)]
    assert bench_main(argv) == 0
    (round_,) = load_mining(out)
    assert round_["phase"] == "learn-split"
    assert round_["revealed"] == {"split": "train", "questions": 3, "gold_sql": False, "limit": 3}
    vote = round_["vote"]
    assert vote["asked"] == 3 and vote["kept"] + vote["refused"] == 3
    assert vote["thresholds"]["samples"] == 3
    assert round_["experiences"] == 3 and round_["mined_experiences"] <= vote["kept"]
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["learn_unlabeled"] is True and manifest["learn_limit"] == 3
    assert manifest["mine_vote_samples"] == 3 and manifest["mine_every"] == 25
    assert manifest["learned"]["vote"]["kept"] == vote["kept"]
    assert manifest["learned"]["revealed"]["gold_sql"] is False
    results = load_results(out / "results.jsonl")
    assert len(results) == 2 and all(r.scored for r in results)
