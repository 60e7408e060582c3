"""``--cot --cot-scope asked``: only the labeled experiences the asked questions retrieve as
their examples are explained (the scripted teacher sees exactly those), and the run's
manifest records the scope."""

from __future__ import annotations

from bench.cli_parser import build_parser
from bench.learn_split import learn_split, revealed_examples
from bench.run import write_run_manifest
from bench.systems import make_system
from indices.embeddings import HashingEmbedder
from tests.agents.scripted import ScriptedLLM
from tests.bench.test_learn_unlabeled import arguments, geo  # noqa: F401 (fixture)


def test_only_the_examples_the_asked_questions_retrieve_are_explained(geo, tmp_path):  # noqa: F811
    explained: list[str] = []

    def teacher(messages, options):
        explained.append(messages[-1]["content"])
        return "1. Not a checked explanation."

    system = make_system("almanac", llm=ScriptedLLM([teacher]), embedder=HashingEmbedder())
    system.prepare(geo.databases)
    args = arguments("--learn-split", "train", "--cot", "--cot-scope", "asked")
    write_run_manifest(tmp_path, {"dataset": geo.name}, fresh=True)
    learn_split(system, revealed_examples(geo, args), args, tmp_path)
    asked = geo.filter(split="test").examples
    retrieved = system.examples_of(asked)
    train = [e.id for e in system.workspace.store.iterate(type="experience")]
    assert 0 < len(retrieved) < len(train)  # three examples shown, four learned

    report = system.profile_cot(asked=asked)
    assert report.experiences == len(retrieved) == report.asked
    assert len(explained) >= len(retrieved)  # a failed check may be asked again
    store = system.workspace.store.get_many(retrieved)
    for ukf_id in retrieved:  # each one the teacher saw, by its question
        question = store[ukf_id].content_resources.get("question") or store[ukf_id].name
        assert any(question in prompt for prompt in explained), question
    # the outcome (a failed check here) is recorded on those alone
    after = system.workspace.store.get_many(train)
    assert {i for i in train if "cot" in after[i].profile} == set(retrieved)


def test_the_scope_is_an_option_of_cot():
    args = build_parser().parse_args(["run", "--dataset", "geoquery", "--system", "almanac"])
    assert args.cot_scope == "all"
    args = build_parser().parse_args(
        ["run", "--dataset", "geoquery", "--system", "almanac", "--cot", "--cot-scope", "asked"]
    )
    assert args.cot_scope == "asked"
