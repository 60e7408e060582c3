"""Curation scores, sources and the CoT accessor, on experiences built in the test."""

from __future__ import annotations

from dataclasses import dataclass

from distill.curation import CurationWeights, curate
from distill.sources import sql_hash, teaching_example
from distill.split import SplitRule
from tests.distill.conftest import human, mined, synthetic


@dataclass
class Item:
    id: str
    source: str
    skeleton: str
    question: str
    sql: str
    vote_share: float | None = None
    cot_checked: bool | None = None
    database: str = "db"


def test_trust_orders_sources_and_hardness_raises_a_score():
    items = [
        Item("h", "human", "s1", "q1", "SELECT 1"),
        Item("m", "mined", "s2", "q2", "SELECT 2"),
        Item("s", "synthetic", "s3", "q3", "SELECT 3"),
    ]
    scores = curate(items)
    assert scores["h"].total > scores["m"].total > scores["s"].total
    assert scores["h"].total == 0.2 * 0.5 + 0.3 * 0.5 + 0.2 * 1.0 + 0.3
    hard = curate(items, hardness={"s": 0.0})  # the base student got it wrong: BF-beta 0
    assert hard["s"].hardness == 1.0 and hard["s"].total > scores["s"].total


def test_recorded_vote_share_and_cot_check_make_the_quality():
    items = [
        Item("a", "mined", "s1", "q1", "SELECT 1", vote_share=0.8, cot_checked=True),
        Item("b", "mined", "s2", "q2", "SELECT 2", cot_checked=False),
    ]
    scores = curate(items)
    assert scores["a"].quality == 0.9 and scores["b"].quality == 0.0


def test_duplicates_and_crowded_skeletons_are_dropped_best_first():
    crowd = [Item(f"a{i}", "human", "sk", f"q{i}", f"SELECT {i}") for i in range(4)]
    synth = [
        Item("s0", "synthetic", "sk", "qs", "SELECT 7"),
        Item("t0", "synthetic", "t", "qt", "SELECT 8"),
    ]
    twice = [Item("d1", "human", "x", "Q ", "SELECT 9"), Item("d2", "human", "x", "q", "SELECT  9")]
    scores = curate(crowd + synth + twice, CurationWeights(max_per_skeleton=2))
    assert [scores[f"a{i}"].diversity for i in range(2)] == [1.0, 0.5]
    assert [scores[f"a{i}"].reason for i in range(4)] == ["", "", "skeleton_cap", "skeleton_cap"]
    assert scores["s0"].reason == "skeleton_cap"  # the humans of its skeleton come first
    assert scores["t0"].kept and scores["t0"].total == 0.2 * 0.5 + 0.3 * 0.5 + 0.2
    assert scores["d1"].kept and scores["d2"].reason == "duplicate"
    low = curate(synth, CurationWeights(min_score=0.5))
    assert low["s0"].reason == "low_score" and not low["s0"].kept


def test_no_validation_skeleton_is_a_train_skeleton_across_databases():
    first = [Item(f"a{i}", "human", f"sk{i % 10}", "q", "s", database="db0") for i in range(20)]
    second = [
        Item(f"b{i}", "human", f"sk{i % 10 + 5}", "q", "s", database="db1") for i in range(20)
    ]
    items = first + second  # db0 and db1 share the skeletons sk5..sk9
    rule = SplitRule(validation_share=0.3, validation_databases=("db1",))
    train, validation = rule.split(items)
    assert train and validation and len(train) + len(validation) == 40
    assert not {t.skeleton for t in train} & {v.skeleton for v in validation}
    assert all(t.database == "db0" for t in train) and len(train) < 10  # sk0..sk4 at most
    assert rule.split(list(reversed(items)))[1] == list(reversed(validation))


def test_sources_and_the_cot_accessor():
    person = human("How many singers do we have?", "SELECT count(*) FROM singer")
    example = teaching_example(person)
    assert example.source == "human" and example.cot is None and example.cot_checked is None
    record = {"text": "1. count the singers", "sql_hash": sql_hash(person.sql), "passed": True}
    checked = teaching_example(person.clone(profile={"cot": record}))
    assert checked.cot == "1. count the singers" and checked.cot_checked is True
    stale = {**record, "sql_hash": sql_hash("SELECT 1")}  # about another SQL: not used
    assert teaching_example(person.clone(profile={"cot": stale})).cot is None
    failed = teaching_example(person.clone(profile={"cot": {**record, "passed": False}}))
    assert failed.cot is None and failed.cot_checked is False
    assert teaching_example(synthetic("q", "SELECT 1", person)).source == "synthetic"
    sure = teaching_example(mined("q", "SELECT name FROM singer", share=1.0))
    assert sure.source == "mined" and sure.vote_share == 1.0
    assert teaching_example(mined("q", "SELECT name FROM singer", share=0.6)) is None


def test_a_users_or_a_workspaces_experience_teaches_no_shared_student():
    person = human("How many singers do we have?", "SELECT count(*) FROM singer")
    assert teaching_example(person) is not None
    assert teaching_example(person.clone(owner="ada")) is None  # a private correction
    assert teaching_example(person.clone(workspace="sales")) is None
