"""The LLM pairer: asked only for what alignment leaves, its answers checked, and the facts it
pairs kept apart by scope when they conflict (scripted LLM; one test with the real 0.5B)."""

from __future__ import annotations

import json

import pytest

from agents.learn.mine import LLMPairer, mine_labeled
from agents.learn.mine.labeled import kind_of
from tests.agents.learn.conftest import labeled
from tests.agents.scripted import ScriptedLLM

SIZE = "what is the size of texas"


def pairs(*items: tuple[str, str]) -> str:
    return json.dumps({"pairs": [{"item": i, "phrase": p} for i, p in items]})


def synonyms(store) -> list:
    found = store.iterate(source="auto", active=None, type="synonym")
    return [e for e in found if kind_of(e) == "column_synonym"]


def test_the_pairer_is_asked_once_for_what_alignment_cannot_pair(geo):
    store, db = geo
    llm = ScriptedLLM([pairs(("i1", "size"))])
    exp = labeled(SIZE, "SELECT area FROM state WHERE state_name = 'texas'")
    report = mine_labeled(store, [exp], pairer=LLMPairer(llm), targets={"geoquery": db})

    (entry,) = synonyms(store)
    assert (entry.name, entry.content) == ("size", "size means state.area")
    assert entry.metadata["mining"]["how"] == "llm"
    assert report.pairer_calls == 1 and report.unpaired == 0
    messages, options = llm.calls[0]
    assert "state.area" in messages[1]["content"] and '["size"]' in messages[1]["content"]
    assert options["json_schema"]["properties"]["pairs"]["items"]["properties"]["phrase"] == {
        "enum": ["size", ""]
    }


def test_answers_outside_the_offered_phrases_are_ignored(geo):
    store, db = geo
    llm = ScriptedLLM([pairs(("i1", "texas"), ("i9", "size"))])  # a known word, an unknown item
    exp = labeled(SIZE, "SELECT area FROM state WHERE state_name = 'texas'")
    report = mine_labeled(store, [exp], pairer=LLMPairer(llm), targets={"geoquery": db})

    assert synonyms(store) == [] and report.unpaired == 1 and report.pairer_calls == 1


def test_no_call_when_alignment_pairs_everything(geo):
    store, db = geo
    llm = ScriptedLLM([pairs()])
    exp = labeled("what is the lowest spot in texas", "SELECT lowest_point FROM highlow")
    mine_labeled(store, [exp], pairer=LLMPairer(llm), targets={"geoquery": db})
    assert llm.calls == []


def test_conflicting_facts_are_kept_apart_by_scope_and_dropped_within_one(geo):
    store, db = geo
    llm = ScriptedLLM([pairs(("i1", "size"))])
    area = "SELECT area FROM state WHERE state_name = 'texas'"
    people = "SELECT population FROM state WHERE state_name = 'texas'"
    scoped = [labeled(SIZE, area, workspace="land"), labeled(SIZE, people, workspace="census")]
    report = mine_labeled(store, scoped, pairer=LLMPairer(llm), targets={"geoquery": db})

    assert report.merge == {"inserted": 2}
    by_scope = {e.workspace: e.content for e in synonyms(store)}
    assert by_scope == {"land": "size means state.area", "census": "size means state.population"}

    same_scope = [labeled(SIZE + " now", area), labeled(SIZE + " today", people)]
    report = mine_labeled(store, same_scope, pairer=LLMPairer(llm), targets={"geoquery": db})
    assert report.dropped["ambiguous_phrase"] == 2  # one scope, two columns: refused
    assert report.merge == {}
    assert {e.workspace for e in synonyms(store)} == {"land", "census"}


@pytest.mark.slow
def test_the_real_small_model_pairs_a_phrase_with_a_column(geo, embedded_llm):
    store, db = geo
    exp = labeled(SIZE, "SELECT area FROM state WHERE state_name = 'texas'")
    pairer = LLMPairer(embedded_llm, timeout=120)
    report = mine_labeled(store, [exp], pairer=pairer, targets={"geoquery": db})

    assert report.pairer_calls == 1 and pairer.failures == 0
    (entry,) = synonyms(store)
    assert (entry.name, entry.content) == ("size", "size means state.area")
