"""``POST /v1/sql``: a user's SQL run read-only on the target, as feedback runs a correction —
rows come back, a write and a bad statement are refused with the reason, the row cap holds,
and only keys that may ask may run SQL."""

from __future__ import annotations

import pytest

RECURSIVE = (
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 12000) "
    "SELECT i FROM n"
)


@pytest.fixture()
def served(make_server, sqlite_target):
    return make_server(target_url=sqlite_target, target_max_rows=10_000)


def test_a_query_returns_its_rows(served):
    body = {"sql": "SELECT name, region FROM customers ORDER BY id"}
    reply = served.request("POST", "/v1/sql", "analyst", json=body)
    assert reply.status_code == 200, reply.text
    result = reply.json()
    assert result["columns"] == ["name", "region"]
    assert result["rows"] == [["Ada", "North"], ["Bo", "South"], ["Cy", "North"]]
    assert result["row_count"] == 3 and result["truncated"] is False
    assert result["seconds"] >= 0


@pytest.mark.parametrize(
    "sql",
    ["DELETE FROM customers", "UPDATE customers SET name = 'x'", "DROP TABLE orders"],
)
def test_a_write_is_refused_and_changes_nothing(served, sql):
    reply = served.request("POST", "/v1/sql", "admin", json={"sql": sql})
    assert reply.status_code == 422, reply.text
    assert "refused" in reply.json()["detail"]
    count = served.request("POST", "/v1/sql", "analyst", json={"sql": "SELECT * FROM customers"})
    assert count.json()["row_count"] == 3


def test_a_bad_statement_says_why(served):
    reply = served.request("POST", "/v1/sql", "analyst", json={"sql": "SELECT nope FROM customers"})
    assert reply.status_code == 422
    detail = reply.json()["detail"]
    assert "nope" in detail and "(sql)" in detail
    empty = served.request("POST", "/v1/sql", "analyst", json={"sql": "   "})
    assert empty.status_code == 422


def test_the_row_cap_holds(served):
    whole = served.request("POST", "/v1/sql", "analyst", json={"sql": RECURSIVE})
    assert whole.status_code == 200, whole.text
    result = whole.json()
    assert result["row_count"] == 10_000 and result["truncated"] is True
    assert result["rows"][0] == [1] and result["rows"][-1] == [10_000]
    asked = {"sql": RECURSIVE, "max_rows": 50}
    capped = served.request("POST", "/v1/sql", "analyst", json=asked).json()
    assert capped["row_count"] == 50 and capped["truncated"] is True and capped["max_rows"] == 50
    beyond = {"sql": RECURSIVE, "max_rows": 1_000_000}  # bounded by the target's cap
    assert served.request("POST", "/v1/sql", "analyst", json=beyond).json()["row_count"] == 10_000


def test_only_askers_may_run_sql(served):
    body = {"sql": "SELECT 1"}
    assert served.request("POST", "/v1/sql", None, json=body).status_code == 401
    assert served.request("POST", "/v1/sql", "ops", json=body).status_code == 403
    assert (
        served.request("POST", "/v1/sql", "analyst", json={"sql": "SELECT 1", "x": 1}).status_code
        == 422
    )


def test_no_target_is_a_conflict(make_server):
    reply = make_server().request("POST", "/v1/sql", "analyst", json={"sql": "SELECT 1"})
    assert reply.status_code == 409
