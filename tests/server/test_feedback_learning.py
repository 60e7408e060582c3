"""What feedback teaches, over HTTP with a scripted LLM on a real target: the facts a
correction taught (``learned``), and credit and blame on the knowledge an answer used, visible
on the entry (``GET /v1/knowledge/{id}``)."""

from __future__ import annotations

from tests.agents.scripted import sql_reply
from tests.server.test_ask_api import (  # noqa: F401  (ask_server is a fixture)
    NORTH,
    QUESTION,
    ask_server,
)
from ukf import SynonymUKF

SETTLED = "Which customers have settled orders?"
OPEN = (
    "SELECT DISTINCT c.name FROM customers c JOIN orders o ON o.customer_id = c.id"
    " WHERE o.status = 'open'"
)
PAID = OPEN.replace("'open'", "'paid'")


def ask(server, key: str, question: str, sql: str) -> dict:
    server.llm.replies = [sql_reply(sql)]
    reply = server.request("POST", "/v1/ask", key, json={"question": question})
    assert reply.status_code == 200, reply.text
    return reply.json()


def feedback(server, key: str, answer_id: str, **body) -> dict:
    reply = server.request("POST", f"/v1/answers/{answer_id}/feedback", key, json=body)
    assert reply.status_code == 200, reply.text
    return reply.json()


def test_a_correction_says_what_it_taught_and_only_its_asker_sees_it(ask_server):  # noqa: F811
    ana = ask_server.key("analyst", user="ana")
    bo = ask_server.key("analyst", user="bo")
    answer = ask(ask_server, ana, SETTLED, OPEN)
    reply = feedback(ask_server, ana, answer["id"], verdict="wrong", corrected_sql=PAID)
    assert reply["scope"] == "user" and reply["credit"]["count"] == "blame"
    [fact] = reply["learned"]
    assert fact["phrase"] == "settled" and fact["kind"] == "value_synonym"
    assert fact["description"] == "\"settled\" → orders.status = 'paid'"
    assert (fact["status"], fact["scope"], fact["action"]) == ("active", "user", "inserted")

    entry = ask_server.request("GET", f"/v1/knowledge/{fact['id']}", ana).json()
    assert entry["owner"] == "ana" and entry["parents"] == [reply["experience_id"]]
    assert entry["metadata"]["mining"]["trust"] == "correction"
    assert ask_server.request("GET", f"/v1/knowledge/{fact['id']}", bo).status_code == 404

    ask_server.state.indices.refresh(wait=True)
    again = ask(ask_server, ana, "List the customers with settled orders", PAID)
    assert fact["id"] in {k["id"] for k in again["knowledge"]}
    other = ask(ask_server, bo, "List the customers with settled orders", PAID)
    assert fact["id"] not in {k["id"] for k in other["knowledge"]}


def test_credit_and_blame_show_on_the_entry_and_count_once_per_answer(ask_server):  # noqa: F811
    analyst = ask_server.keys["analyst"]
    answer = ask(ask_server, analyst, QUESTION, NORTH)
    north = next(k["id"] for k in answer["knowledge"] if k["name"] == "North")

    def counts() -> tuple[int, int]:
        entry = ask_server.request("GET", f"/v1/knowledge/{north}", analyst).json()
        note = entry["metadata"].get("feedback", {})
        return note.get("credit", 0), note.get("blame", 0)

    assert counts() == (0, 0)
    reply = feedback(ask_server, analyst, answer["id"], verdict="correct")
    assert reply["credit"]["count"] == "credit" and reply["credit"]["entries"] >= 1
    assert counts() == (1, 0)
    feedback(ask_server, analyst, answer["id"], verdict="correct")
    assert counts() == (1, 0)
    feedback(ask_server, analyst, answer["id"], verdict="wrong")
    assert counts() == (0, 1)
    entry = ask_server.request("GET", f"/v1/knowledge/{north}", analyst).json()
    assert entry["id"] == north and not entry["inactive_mark"]


def test_agreeing_corrections_teach_their_workspace(ask_server):  # noqa: F811
    ana = ask_server.key("analyst", user="ana", workspace="north")
    bo = ask_server.key("analyst", user="bo", workspace="north")
    cy = ask_server.key("analyst", user="cy", workspace="north")
    dan = ask_server.key("analyst", user="dan", workspace="south")
    first = ask(ask_server, ana, SETTLED, OPEN)
    assert feedback(ask_server, ana, first["id"], verdict="wrong", corrected_sql=PAID)["learned"]
    second = ask(ask_server, bo, SETTLED, OPEN)
    reply = feedback(ask_server, bo, second["id"], verdict="wrong", corrected_sql=PAID)
    assert reply["scope"] == "workspace"
    shared = [f for f in reply["learned"] if f["scope"] == "workspace"]
    assert [f["phrase"] for f in shared] == ["settled"] and shared[0]["status"] == "active"

    ask_server.state.indices.refresh(wait=True)
    used = ask(ask_server, cy, "List the customers with settled orders", PAID)["knowledge"]
    assert shared[0]["id"] in {k["id"] for k in used}
    outside = ask(ask_server, dan, "List the customers with settled orders", PAID)["knowledge"]
    assert shared[0]["id"] not in {k["id"] for k in outside}


def test_blamed_mined_knowledge_leaves_use_for_the_review_queue(ask_server):  # noqa: F811
    store = ask_server.state.store
    paid = next(
        e
        for e in store.iterate(type="enum", tags={"DATABASE": "shop"})
        if e.content_resources.get("value") == "paid"
    )
    mined = SynonymUKF.create(
        "settled",
        paid,
        target_name="orders.status = 'paid'",
        database="shop",
        collection="semantics",
        source="auto",
        priority=-1,
    )
    store.upsert(mined)
    analyst = ask_server.keys["analyst"]
    for _ in range(3):  # ALMANAC_BLAME_THRESHOLD is 3 by default
        ask_server.state.indices.refresh(wait=True)
        answer = ask(ask_server, analyst, SETTLED, PAID)
        assert mined.id in {k["id"] for k in answer["knowledge"]}
        reply = feedback(ask_server, analyst, answer["id"], verdict="wrong")
    assert reply["credit"]["deactivated"] == [mined.id]
    entry = ask_server.request("GET", f"/v1/knowledge/{mined.id}", "admin").json()
    assert entry["inactive_mark"] and entry["metadata"]["feedback"]["blame"] == 3
    assert entry["metadata"]["review"]["reason"] == "blamed"
    ask_server.state.indices.refresh(wait=True)
    answer = ask(ask_server, analyst, SETTLED, PAID)
    assert mined.id not in {k["id"] for k in answer["knowledge"]}
