"""Corrections over HTTP: private to their asker, shared by agreement or by a reviewer."""

from __future__ import annotations

from indices.embeddings import HashingEmbedder
from server.state import build_state
from tests.agents.scripted import ScriptedLLM, sql_reply
from tests.server.conftest import make_settings, running_server
from tests.server.test_ask_api import (  # noqa: F401  (ask_server is a fixture)
    NORTH,
    QUESTION,
    Tiers,
    ask_server,
    profile_shop,
)

ATTACK = "SELECT 'attacker-chosen answer' AS name"


def corrected(server, key: str, sql: str = NORTH) -> dict:
    server.llm.replies = [sql_reply("SELECT name FROM customers")]
    answer = server.request("POST", "/v1/ask", key, json={"question": QUESTION}).json()
    reply = server.request(
        "POST",
        f"/v1/answers/{answer['id']}/feedback",
        key,
        json={"verdict": "wrong", "corrected_sql": sql},
    )
    assert reply.status_code == 200, reply.text
    return reply.json()


def prompt_of_next_question(server, key: str) -> str:
    server.state.indices.refresh(wait=True)
    server.llm.replies = [sql_reply(NORTH)]
    server.request("POST", "/v1/ask", key, json={"question": "Which customers are in the North?"})
    return server.llm.calls[-1][0][1]["content"]


def test_an_analysts_planted_answer_reaches_nobody_else(ask_server):  # noqa: F811
    mallory = ask_server.key("analyst", user="mallory")  # no workspace: the global layer
    planted = corrected(ask_server, mallory, ATTACK)
    assert planted["labeled"] and planted["scope"] == "user" and planted["shared_id"] is None
    assert "attacker-chosen" in prompt_of_next_question(ask_server, mallory)  # hers, for her
    for victim in (ask_server.key("analyst", user="ana"), ask_server.keys["analyst"]):
        assert "attacker-chosen" not in prompt_of_next_question(ask_server, victim)


def test_two_analysts_agreeing_share_a_correction_in_their_workspace(ask_server):  # noqa: F811
    ana = ask_server.key("analyst", user="ana", workspace="north")
    bo = ask_server.key("analyst", user="bo", workspace="north")
    cy = ask_server.key("analyst", user="cy", workspace="north")
    outsider = ask_server.key("analyst", user="dan", workspace="south")
    assert corrected(ask_server, ana)["scope"] == "user"
    assert "Similar questions answered before" not in prompt_of_next_question(ask_server, cy)
    shared = corrected(ask_server, bo, NORTH + " ORDER BY name")
    assert shared["scope"] == "workspace" and shared["shared_id"]
    assert NORTH in prompt_of_next_question(ask_server, cy)
    assert "Similar questions answered before" not in prompt_of_next_question(ask_server, outsider)


def test_a_reviewer_shares_or_rejects_only_within_their_scope(ask_server):  # noqa: F811
    ana = ask_server.key("analyst", user="ana", workspace="north")
    eve = ask_server.key("analyst", user="eve", workspace="south")
    north_ops = ask_server.key("ops", user="rita", workspace="north")
    south_ops = ask_server.key("ops", user="sam", workspace="south")
    mine = corrected(ask_server, ana)["experience_id"]
    theirs = corrected(ask_server, eve)["experience_id"]

    queue = ask_server.request("GET", "/v1/experiences/review", north_ops).json()
    assert [item["id"] for item in queue["items"]] == [mine]
    assert queue["items"][0]["asked_by"] == "ana" and queue["items"][0]["sql"] == NORTH
    everything = ask_server.request("GET", "/v1/experiences/review", "admin").json()
    assert {item["id"] for item in everything["items"]} == {mine, theirs}
    assert ask_server.request("GET", "/v1/experiences/review", ana).status_code == 403

    path = f"/v1/experiences/{mine}/approve"
    assert ask_server.request("POST", path, south_ops).status_code == 404  # out of scope
    approved = ask_server.request("POST", path, north_ops)
    assert approved.status_code == 200 and approved.json()["scope"] == "workspace"
    assert ask_server.request("POST", path, north_ops).status_code == 409
    rejected = ask_server.request(
        "POST", f"/v1/experiences/{theirs}/reject", south_ops, json={"reason": "wrong filter"}
    )
    assert rejected.status_code == 200
    assert ask_server.request("GET", "/v1/experiences/review", "admin").json()["count"] == 0
    audit = ask_server.request("GET", "/v1/audit", "admin").json()["items"]
    assert {"review.approve", "review.reject"} <= {item["action"] for item in audit}
    assert (
        ask_server.request("POST", f"/v1/experiences/{'0' * 32}/approve", "admin").status_code
        == 404
    )


def test_an_agreement_of_one_shares_every_correction_at_once(tmp_path, store_url, target_url):
    profile_shop(store_url, target_url)
    llm = ScriptedLLM([])
    settings = make_settings(
        tmp_path,
        store_url,
        target_url=target_url,
        target_name="shop",
        llm_tiers=[{"name": "default"}],
        feedback_agreement=1,
    )
    state = build_state(settings, embedder=HashingEmbedder(), llms=Tiers(default=llm))
    with running_server(state) as server:
        server.llm = llm
        ana = server.key("analyst", user="ana", workspace="north")
        shared = corrected(server, ana)
        assert shared["scope"] == "workspace" and shared["shared_id"]
        assert server.state.store.get(shared["shared_id"]).owner is None
