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
