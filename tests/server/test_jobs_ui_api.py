"""GET /v1/jobs/kinds: what the web page's "start a job" form offers each caller."""

from __future__ import annotations


def _kinds(server, as_):
    reply = server.request("GET", "/v1/jobs/kinds", as_)
    assert reply.status_code == 200, reply.text
    return {item["name"]: item for item in reply.json()["items"]}


def test_kinds_say_who_may_submit_them_and_their_parameters(server):
    ops = _kinds(server, "ops")
    assert {"profile", "reindex", "import", "mine", "distill-train"} <= set(ops)
    assert ops["reindex"]["allowed"] and ops["reindex"]["refused"] is None
    assert ops["reindex"]["permission"] == "jobs:write"
    assert ops["distill-train"]["permission"] == "distill"
    assert not ops["distill-train"]["allowed"]
    assert "'distill'" in ops["distill-train"]["refused"]
    profile = ops["profile"]["params"]["properties"]
    assert {"database_name", "sample_rows"} <= set(profile)
    assert ops["profile"]["unavailable"] == "no target database is configured"
    assert ops["import"]["params"]["additionalProperties"] is False

    ml = _kinds(server, "ml")
    assert ml["distill-train"]["allowed"] and not ml["reindex"]["allowed"]
    assert all(item["allowed"] for item in _kinds(server, "admin").values())


def test_a_workspace_key_is_told_why_it_may_not_profile(server):
    key = server.key("ops", "scoped", workspace="sales")
    kinds = _kinds(server, key)
    assert not kinds["profile"]["allowed"] and "workspace 'sales'" in kinds["profile"]["refused"]
    assert kinds["reindex"]["allowed"]  # the permission alone decides it
    # and the form's refusal is the API's: submitting is refused the same way
    reply = server.request("POST", "/v1/jobs", key, json={"kind": "profile"})
    assert reply.status_code == 403


def test_kinds_need_a_key_that_may_watch_jobs(server):
    assert server.request("GET", "/v1/jobs/kinds", "analyst").status_code == 403
    assert server.request("GET", "/v1/jobs/kinds").status_code == 401
    # the path is not taken for a job id
    assert server.request("GET", "/v1/jobs/no-such-job", "ops").status_code == 404
