"""The dataset builder: the chain's own prompts, the split by skeleton, the manifest."""

from __future__ import annotations

import json

import pytest

from agents.pipeline import ModelTier, Pipeline, PipelineOptions
from distill.dataset import DatasetOptions, build_dataset, build_tuples
from distill.dataset_files import EmptyDatasetError
from distill.prompts import HoldOutRetriever
from distill.split import SplitRule
from tests.agents.scripted import ScriptedLLM, sql_reply
from tests.distill.conftest import DB, spider_store
from ukf import QueryContext


def test_the_builder_prompt_is_the_prompt_the_chain_sends(concert):
    targets = {DB: concert.database}
    tuples = {t.question: t for t in build_tuples(concert.store, targets, concert.retriever)}
    chosen = tuples["Show all countries and the number of singers in each country."]
    user = chosen.messages[1]["content"]
    assert "### Similar questions answered before" in user
    assert f"Question: {chosen.question}" not in user, "the example itself is held out"
    # the real chain over the same store, its retriever holding the same experience out
    sent = chain_prompt(concert, HoldOutRetriever(concert.retriever, [chosen.id]), chosen)
    assert [m["role"] for m in sent] == ["system", "user"]
    assert chosen.messages == sent
    # without the hold-out the chain shows the answer as its own example: the test can fail
    unfiltered = chain_prompt(concert, concert.retriever, chosen)
    assert f"Question: {chosen.question}" in unfiltered[1]["content"]


def chain_prompt(concert, retriever, chosen) -> list[dict[str, str]]:
    """The messages the chain sends its model for ``chosen``'s question."""
    llm = ScriptedLLM([sql_reply(chosen.sql)])
    pipeline = Pipeline(
        store=concert.store,
        retriever=retriever,
        database=concert.database,
        database_name=DB,
        tiers=[ModelTier("scripted", llm)],
        options=PipelineOptions(log_questions=False),
    )
    pipeline.ask(chosen.question, QueryContext.model_validate(chosen.context))
    return [dict(m) for m in llm.calls[0][0]]


def test_no_validation_tuple_shares_a_skeleton_with_a_train_tuple(concert, tmp_path):
    options = DatasetOptions(split=SplitRule(validation_share=0.3))
    out = tmp_path / "out"
    manifest = build_dataset(concert.store, {DB: concert.database}, concert.retriever, out, options)
    read = lambda name: [json.loads(line) for line in (out / name).read_text().splitlines()]  # noqa: E731
    train, validation = read("train.jsonl"), read("validation.jsonl")
    assert train and validation
    assert not {t["skeleton"] for t in train} & {t["skeleton"] for t in validation}
    assert manifest["counts"]["kept"] == {"human": 24, "mined": 1, "synthetic": 1}
    assert len(train) + len(validation) == 26
    assert manifest["store"]["version"] == concert.store.version
    assert len(manifest["store"]["hash"]) == 64 and manifest["kept_share"] == 1.0
    assert manifest["tokens"]["max"] >= manifest["tokens"]["mean"] > 100
    assert manifest["split"]["by"] == ["database", "sql_skeleton"]
    mined = next(t for t in train + validation if t["source"] == "mined")
    assert mined["vote_share"] == 1.0 and mined["target"].startswith("```sql\nSELECT name")


def test_a_held_out_database_goes_wholly_to_validation(concert):
    rule = SplitRule(validation_share=0.0, validation_databases=(DB,))
    tuples = build_tuples(
        concert.store, {DB: concert.database}, concert.retriever, DatasetOptions(split=rule)
    )
    assert {t.split for t in tuples} == {"validation"}


def test_a_store_without_experiences_is_an_empty_dataset(concert, tmp_path):
    empty = spider_store(tmp_path / "empty", [])
    with pytest.raises(EmptyDatasetError, match="no training tuple"):
        build_dataset(empty.store, {DB: empty.database}, empty.retriever, tmp_path / "out")


def test_an_unknown_database_is_refused(concert, tmp_path):
    with pytest.raises(ValueError, match="no target database for \\['nope'\\]"):
        build_tuples(
            concert.store,
            {DB: concert.database},
            concert.retriever,
            DatasetOptions(databases=["nope"]),
        )


def test_a_dataset_replaces_an_earlier_one_whole_and_never_another_folder(concert, tmp_path):
    root = tmp_path / "datasets"
    out = root / "data"
    first = build_dataset(concert.store, {DB: concert.database}, concert.retriever, out)
    (out / "stale.jsonl").write_text("{}\n")  # a file the new dataset does not write
    second = build_dataset(concert.store, {DB: concert.database}, concert.retriever, out)
    assert second["counts"] == first["counts"] and not (out / "stale.jsonl").exists()
    assert sorted(p.name for p in root.iterdir()) == ["data"]  # no partial or old folder
    other = tmp_path / "notes"
    other.mkdir()
    (other / "mine.txt").write_text("keep me")
    with pytest.raises(ValueError, match="no dataset folder"):
        build_dataset(concert.store, {DB: concert.database}, concert.retriever, other)
    assert (other / "mine.txt").read_text() == "keep me"
