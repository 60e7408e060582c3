"""The gate's targeted held set: questions saying a candidate's phrase first, spread over the
candidates, then the rest in SHA-256 order; never a candidate's source; deterministic. End to
end on GeoQuery with a scripted model: a candidate breaking a question that says its phrase
is rejected because targeting holds that question, where a random held set of the same size
(the SHA-256 order alone) misses it and lets the candidate through."""

from __future__ import annotations

import random

import pytest

from agents.learn.gate import GateOptions, RegressionGate
from agents.learn.gate_held import held_set, phrases_of, sha_order
from agents.learn.mine import candidates, mine_labeled
from agents.pipeline import ModelTier, Pipeline, PipelineOptions
from bench.metrics.exact import execution_accuracy
from server.mine_gate import held_sample
from tests.agents.learn.conftest import GEOQUERY, labeled, profiled
from tests.agents.scripted import ScriptedLLM, sql_reply
from ukf import MINING_KEY, KnowledgeUKF, PredicateUKF, RuleUKF, SynonymUKF

DB = "dog_kennels"


def synonym(phrase: str, parents: list[str], **resources: str) -> SynonymUKF:
    return SynonymUKF.create(
        phrase,
        f"col-{phrase}",
        target_name="Charges.charge_amount",
        database=DB,
        parents=parents,
        source="auto",
        content_resources={"table": "Charges", "column": "charge_amount", **resources},
    )


def predicate(name: str, condition: str, parents: list[str]) -> PredicateUKF:
    return PredicateUKF.create(name, condition, database=DB, parents=parents, source="auto")


def join(left: str, right: str, parents: list[str]) -> KnowledgeUKF:
    return KnowledgeUKF.create(
        f"join {left}.id = {right}.id",
        f"Join {left} and {right}.",
        database=DB,
        parents=parents,
        source="auto",
        content_resources={
            "kind": "join",
            "left_table": left,
            "left_columns": ["id"],
            "right_table": right,
            "right_columns": ["id"],
        },
    )


def asking(*questions: str) -> list:
    return [labeled(q, "SELECT 1", database=DB, verified=True) for q in questions]


AMOUNT = asking(*(f"what is the amount paid by owner {i}" for i in range(5)))
KOREA = asking("which countries include the text Korea", "list the Korea based breeders")
OTHERS = asking(*(f"how many dogs does owner {i} have" for i in range(6)))
SOURCE = labeled("what is the largest amount charged", "SELECT 1", database=DB, verified=True)


def test_phrases_are_names_synonyms_values_constants_and_join_tables() -> None:
    value = synonym("Korean", [], value="Korea ")
    value.add_synonyms(["south korea"])
    assert phrases_of(value) == [("korean",), ("south", "korea"), ("korea",)]
    text = predicate("text korea", "country LIKE '%Korea %' AND age > 3", [])
    assert phrases_of(text) == [("text", "korea"), ("korea",)]  # the number is left out
    assert phrases_of(join("Templates", "Ref_Document_Types", [])) == [
        ("template",),
        ("ref", "document", "type"),
    ]
    habit = RuleUKF.create(
        "default status open",
        "filter status = 'open'",
        kind="intent",
        database=DB,
        content_resources={"preference": {"column": "status", "value": "open"}},
    )
    assert phrases_of(habit) == []


def test_targeted_questions_come_first_spread_over_the_candidates() -> None:
    pool = [*OTHERS, *AMOUNT, *KOREA]
    amount, korea = synonym("amount", [SOURCE.id]), predicate("korea", "x LIKE '%Korea%'", [])

    chosen = held_set(pool, [amount, korea], 4)

    assert chosen.targeted == 4 and len(chosen.experiences) == 4
    ids = set(chosen.ids)
    # two turns of the round-robin: each candidate got two, the common phrase not all four
    assert len(ids & {e.id for e in AMOUNT}) == 2 and len(ids & {e.id for e in KOREA}) == 2
    first_turn = {e.id for e in chosen.experiences[:2]}
    assert len(first_turn & {e.id for e in AMOUNT}) == 1
    # each candidate's questions are taken in SHA-256 order
    by_sha = sorted(AMOUNT, key=lambda e: sha_order(e.id))
    assert {e.id for e in by_sha[:2]} <= ids


def test_the_rest_is_filled_in_sha_order_after_every_targeted_question() -> None:
    pool = [*OTHERS, *AMOUNT, *KOREA]
    amount, korea = synonym("amount", []), predicate("korea", "x LIKE '%Korea%'", [])

    chosen = held_set(pool, [amount, korea], 10)

    assert chosen.targeted == len(AMOUNT) + len(KOREA) == 7
    assert set(chosen.ids[:7]) == {e.id for e in [*AMOUNT, *KOREA]}
    assert chosen.ids[7:] == [e.id for e in sorted(OTHERS, key=lambda e: sha_order(e.id))][:3]
    # no candidate phrase said: the SHA-256 order alone (the former random sample)
    plain = held_set(pool, [synonym("breed", [])], 5)
    assert plain.targeted == 0
    assert plain.ids == [e.id for e in sorted(pool, key=lambda e: sha_order(e.id))][:5]


def test_a_candidates_sources_are_never_held() -> None:
    pool = [SOURCE, *AMOUNT, *OTHERS]
    parents = [SOURCE.id, AMOUNT[0].id, OTHERS[0].id]
    amount = synonym("amount", parents)

    chosen = held_set(pool, [amount, predicate("dog", "x = 1", [AMOUNT[1].id])], 100)

    assert not set(chosen.ids) & {*parents, AMOUNT[1].id}
    assert chosen.targeted == len(AMOUNT) + len(OTHERS) - 3  # "dog" is said by the others
    assert len(chosen.ids) == len(pool) - 4


def test_the_held_set_does_not_depend_on_the_order_of_its_inputs() -> None:
    pool = [*OTHERS, *AMOUNT, *KOREA, *AMOUNT[:2]]  # duplicates count once
    cands = [synonym("amount", []), predicate("korea", "x LIKE '%Korea%'", []), join("A", "B", [])]
    first = held_set(pool, cands, 6)
    shuffled = random.Random(7)
    for _ in range(5):
        pool2, cands2 = pool[:], cands[:]
        shuffled.shuffle(pool2)
        shuffled.shuffle(cands2)
        assert held_set(pool2, cands2, 6).ids == first.ids
    assert len(set(first.ids)) == 6 and first.targeted == 6


# ---------------------------------------------------------------- end to end (scripted model)
SEATTLE_STATE = "which state is seattle in"
SEATTLE_STATE_SQL = "SELECT state_name FROM city WHERE city_name = 'seattle'"
FILLERS = {
    f"what is the capital of {s}": f"SELECT capital FROM state WHERE state_name = '{s}'"
    for s in ["texas", "ohio", "utah", "iowa", "maine", "idaho", "oregon", "alaska"]
}
GOLD = {SEATTLE_STATE: SEATTLE_STATE_SQL, **FILLERS}


def misled_by_seattle(messages, _options) -> str:
    """Right on every question, except the Seattle one when the mined Seattle predicate is in
    its prompt (a candidate breaking a question that says its phrase)."""
    text = messages[-1]["content"]
    question = text.rsplit("### Question", 1)[-1].strip()
    knowledge = text.split("### Knowledge", 1)[-1] if "### Knowledge" in text else ""
    if question == SEATTLE_STATE and 'Predicate "seattle"' in knowledge:
        return sql_reply("SELECT state_name FROM state WHERE capital = 'seattle'")
    return sql_reply(GOLD.get(question, "SELECT 1"))


def gated(tmp_path, targeted: bool) -> tuple[str, list, int]:
    """Mine the Seattle predicate in a fresh GeoQuery store, gate it on 2 held questions
    (targeted, or the first 2 in SHA-256 order); (its status, the held ids, targeted)."""
    tmp_path.mkdir()
    store, db = profiled(tmp_path, GEOQUERY, "geoquery")
    try:
        pool = [labeled(q, sql, verified=True) for q, sql in GOLD.items()]
        source = labeled(
            "how many people live in seattle",
            "SELECT population FROM city WHERE city_name = 'seattle'",
            verified=True,
        )
        store.upsert_many([*pool, source])
        mine_labeled(store, [source], job_id="job-1", targets={"geoquery": db})
        pending = candidates(store, job_id="job-1")
        assert "seattle" in {c.name for c in pending}
        chosen = held_sample(store, "geoquery", pending, 2) if targeted else None
        held = chosen.experiences if chosen else sorted(pool, key=lambda e: sha_order(e.id))[:2]
        llm = ScriptedLLM([misled_by_seattle])

        def factory(kb, retriever):
            return Pipeline(
                store=kb,
                retriever=retriever,
                database=db,
                database_name="geoquery",
                tiers=[ModelTier("scripted", llm)],
                options=PipelineOptions(),
            )

        gate = RegressionGate(
            factory,
            held,
            db,
            options=GateOptions(per_entry_up_to=8),
            same_result=execution_accuracy,
        )
        gate.run(store, pending)
        (seattle,) = [e for e in store.iterate(source="auto", active=None) if e.name == "seattle"]
        targeted_count = chosen.targeted if chosen else 0
        return seattle.metadata[MINING_KEY]["status"], [h.id for h in held], targeted_count
    finally:
        db.close()
        store.close()


def test_targeting_holds_the_question_a_candidate_breaks(tmp_path):
    if not GEOQUERY.is_file():
        pytest.skip(f"benchmark database {GEOQUERY} not found (set ALMANAC_BENCH_DATA)")
    seattle_question = labeled(SEATTLE_STATE, SEATTLE_STATE_SQL, verified=True).id

    status, held, _ = gated(tmp_path / "random", targeted=False)
    assert seattle_question not in held  # a random 2 of 9 miss the question saying "seattle"
    assert status == "active"  # so the gate saw nothing broken

    status, held, targeted = gated(tmp_path / "targeted", targeted=True)
    assert seattle_question in held and targeted == 1 and len(held) == 2
    assert status == "rejected"
