"""Corrections stay their asker's until users agree on them or a reviewer approves them."""

from __future__ import annotations

import pytest

from agents.experience_review import APPROVED, REJECTED, REVIEW, ReviewError
from agents.pipeline import Pipeline
from kb.errors import KnowledgeNotFoundError
from tests.agents.scripted import ScriptedLLM, sql_reply
from tests.agents.test_pipeline import make
from ukf import QueryContext, Reader

QUESTION = "Which singers come from France?"
WRONG = "SELECT name FROM singer"
FRANCE = "SELECT name FROM singer WHERE country = 'France'"
FRANCE_AGAIN = "SELECT Name FROM singer WHERE Country = 'France' ORDER BY 1"  # same rows
SHOP = "shop"


def reader(user: str, workspace: str | None = SHOP) -> Reader:
    return Reader(user=user, workspace=workspace)


def correct(pipeline: Pipeline, who: Reader, sql: str = FRANCE):
    pipeline.tiers[-1].llm.replies = [sql_reply(WRONG)]
    answer = pipeline.ask(QUESTION, QueryContext(reader=who))
    return pipeline.feedback(answer.id, "wrong", corrected_sql=sql, reader=who)


def visible(store, ukf_id: str, who: Reader | None) -> bool:
    try:
        store.get(ukf_id, reader=who)
    except KnowledgeNotFoundError:
        return False
    return True


def test_a_correction_is_its_askers_alone_until_a_second_user_agrees(concert):
    store, _, _ = concert
    pipeline = make(concert, ScriptedLLM([]))
    ana, bo, cy = reader("ana"), reader("bo"), reader("cy")
    first = correct(pipeline, ana)
    assert first.labeled and first.scope == "user" and first.shared_id is None
    mine = store.get(first.experience_id, reader=ana)
    assert mine.owner == "ana" and mine.workspace == SHOP and mine.content_resources["verified"]
    assert not visible(store, first.experience_id, bo)
    assert not visible(store, first.experience_id, reader("eve", workspace=None))

    # a second user reaching the same result (other SQL text) shares it in the workspace
    second = correct(pipeline, bo, FRANCE_AGAIN)
    assert second.scope == "workspace" and second.shared_id
    shared = store.get(second.shared_id, reader=cy)
    assert shared.owner is None and shared.workspace == SHOP and shared.labeled
    assert set(shared.parents) == {first.experience_id, second.experience_id}
    assert shared.content_resources[REVIEW]["users"] == ["ana", "bo"]
    assert not visible(store, second.shared_id, reader("eve", workspace="other"))
    # the next question of a third user in the workspace retrieves it as an example
    pipeline.tiers[-1].llm.replies = [sql_reply(FRANCE)]
    pipeline.ask("Which singers are from France?", QueryContext(reader=cy))
    prompt = pipeline.tiers[-1].llm.calls[-1][0][1]["content"]
    assert "Similar questions answered before" in prompt and "France" in prompt


def test_the_same_user_twice_or_a_different_result_is_no_agreement(concert):
    pipeline = make(concert, ScriptedLLM([]))
    assert correct(pipeline, reader("ana")).scope == "user"
    assert correct(pipeline, reader("ana")).scope == "user"
    other = correct(pipeline, reader("bo"), "SELECT name FROM singer WHERE country = 'Netherlands'")
    assert other.scope == "user"


def test_an_attacker_chosen_answer_does_not_reach_other_workspaces_or_the_global_layer(concert):
    store, _, _ = concert
    pipeline = make(concert, ScriptedLLM([]))
    planted = correct(pipeline, reader("mallory", workspace=None), "SELECT 'attacker-chosen'")
    assert planted.scope == "user"
    for victim in (reader("ana"), reader("bo", workspace=None), Reader()):
        assert not visible(store, planted.experience_id, victim)


def test_a_reviewer_approves_or_rejects_what_their_scope_covers(concert):
    store, _, _ = concert
    pipeline = make(concert, ScriptedLLM([]))
    review = pipeline.experiences.review
    ana = correct(pipeline, reader("ana"))
    eve = correct(pipeline, reader("eve", workspace=None), FRANCE_AGAIN)
    assert {e.id for e in review.pending(workspace=SHOP)} == {ana.experience_id}
    assert {e.id for e in review.pending(workspace=None)} == {ana.experience_id, eve.experience_id}
    with pytest.raises(ReviewError) as elsewhere:  # a shop reviewer cannot see eve's
        review.approve(eve.experience_id, "rita", workspace=SHOP)
    assert elsewhere.value.status == 404
    with pytest.raises(ReviewError):
        review.approve("0" * 32, "rita", workspace=None)

    sharing = review.approve(ana.experience_id, "rita", workspace=SHOP)
    assert sharing.scope == "workspace" and visible(store, sharing.shared_id, reader("cy"))
    assert store.get(ana.experience_id).content_resources[REVIEW]["status"] == APPROVED
    with pytest.raises(ReviewError) as twice:
        review.approve(ana.experience_id, "rita", workspace=SHOP)
    assert twice.value.status == 409

    rejected = review.reject(eve.experience_id, "root", workspace=None, reason="wrong filter")
    assert rejected.content_resources[REVIEW]["status"] == REJECTED
    assert review.pending(workspace=None) == []
    assert visible(store, eve.experience_id, reader("eve", workspace=None))  # still hers


def test_agreement_one_shares_at_once_and_system_feedback_is_trusted(concert):
    store, _, _ = concert
    llm = ScriptedLLM([sql_reply(WRONG)])
    pipeline = make(concert, llm)
    answer = pipeline.ask(QUESTION)  # system access: no asker
    outcome = pipeline.feedback(answer.id, "wrong", corrected_sql=FRANCE)
    assert outcome.scope == "global" and outcome.shared_id == outcome.experience_id
    assert store.get(outcome.experience_id).owner is None
    eager = make(concert, ScriptedLLM([]))
    eager.experiences.review.agreement = 1
    assert correct(eager, reader("ana")).scope == "workspace"
