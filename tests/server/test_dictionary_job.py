"""The ``dictionary`` job over HTTP: roles, the import folder, the report, the audit, and the
indices following its writes (store on SQLite and PostgreSQL)."""

from __future__ import annotations

CSV = """table,column,description,synonyms
orders,status,Payment state of the order (paid open or void),payment state
orders,amount,Order total in euros,
customers,,People who buy from the shop,clientele
orders,discount,Not a column of orders,
"""


def _submit(server, params, as_="ops"):
    return server.request("POST", "/v1/jobs", as_, json={"kind": "dictionary", "params": params})


def _run(server, params, as_="ops"):
    reply = _submit(server, params, as_)
    assert reply.status_code == 202, reply.text
    return server.wait_job(reply.json()["id"])


def test_a_dictionary_job_attaches_descriptions_and_reports(make_server, sqlite_target, tmp_path):
    server = make_server(target_url=sqlite_target, target_name="shop")
    profile = _submit(server, {}, "ops")  # wrong params are refused before queueing
    assert profile.status_code == 422
    reply = server.request("POST", "/v1/jobs", "ops", json={"kind": "profile", "params": {}})
    assert server.wait_job(reply.json()["id"])["state"] == "succeeded"
    folder = server.state.settings.resolved_import_dir
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "shop.csv").write_text(CSV, encoding="utf-8")
    version = server.state.store.version

    dry = _run(server, {"path": "shop.csv", "dry_run": True})
    assert dry["state"] == "succeeded", dry
    assert dry["result"]["written"] == 3 and server.state.store.version == version

    job = _run(server, {"path": "shop.csv"})
    assert job["state"] == "succeeded", job
    result = job["result"]
    assert (result["matched"], result["written"], result["unknown"]) == (3, 3, 1)
    assert result["databases"] == ["shop"]
    assert result["unknown_records"][0]["column"] == "orders.discount"
    assert result["per_table"]["shop.orders"] == {"written": 2, "unknown": 1}
    status = next(server.state.store.iterate(type="column", name="status"))
    assert status.description.startswith("Payment state")
    assert status.metadata["dictionary"]["file"] == "shop.csv"
    audit = server.request("GET", "/v1/audit", "admin", params={"action": "dictionary"}).json()
    assert audit["items"][0]["job_id"] == job["id"] and audit["items"][0]["entry_count"] == 3
    hits = server.request(
        "POST", "/v1/knowledge/search", "analyst", json={"mode": "string", "query": "clientele"}
    ).json()["hits"]
    assert any(h["name"] == "customers" for h in hits)  # the indices followed the job

    again = _run(server, {"path": "shop.csv"})
    assert again["result"]["written"] == 0 and again["result"]["unchanged"] == 3


def test_who_may_run_it_and_what_it_refuses(make_server, sqlite_target):
    server = make_server(target_url=sqlite_target, target_name="shop")
    folder = server.state.settings.resolved_import_dir
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "shop.csv").write_text(CSV, encoding="utf-8")
    (folder / "empty.csv").write_text("", encoding="utf-8")
    for role in ("analyst", "ml"):
        assert _submit(server, {"path": "shop.csv"}, role).status_code == 403
    scoped = server.key("ops", user="sam", workspace="sales")
    denied = _submit(server, {"path": "shop.csv"}, scoped)
    assert denied.status_code == 403 and "global knowledge" in denied.text
    escape = _run(server, {"path": "../shop.csv"})
    assert escape["state"] == "failed" and "outside the import folder" in escape["error"]
    empty = _run(server, {"path": "empty.csv"})
    assert empty["state"] == "failed" and "empty.csv: the file is empty" in empty["error"]
    unprofiled = _run(server, {"path": "shop.csv"}, "admin")
    assert unprofiled["state"] == "failed"
    assert "no profiled tables of database shop" in unprofiled["error"]
