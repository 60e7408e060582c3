"""/v1/knowledge on SQLite and PostgreSQL: CRUD, the four search modes, import/export,
the audit log, visibility between users, and bad inputs that leave the store unchanged."""

from __future__ import annotations

import json

from kb.jsonl import write_jsonl
from tests.support.samples import every_template
from ukf import KnowledgeUKF


def _entry(name: str = "BCR", **fields) -> dict:
    """A knowledge entry as a client writes it: only the fields it sets."""
    fields.setdefault("synonyms", ["budget completion rate"])
    entry = KnowledgeUKF.create(name, "Budget completion rate", database="autofin", **fields)
    return {"type": "knowledge", **entry.model_dump(mode="json", exclude_defaults=True)}


def test_create_get_patch_delete_and_the_audit_trail(server):
    created = server.request("POST", "/v1/knowledge", "ops", json=_entry())
    assert created.status_code == 201
    entry = created.json()
    assert entry["creator"] == "ops" and entry["source"] == "user"  # provenance defaults
    uid = entry["id"]
    assert server.request("GET", f"/v1/knowledge/{uid}", "analyst").json()["name"] == "BCR"
    again = server.request("POST", "/v1/knowledge", "ops", json=_entry())
    assert again.status_code == 409 and uid in again.json()["detail"]

    patched = server.request(
        "PATCH", f"/v1/knowledge/{uid}", "ops", json={"description": "done / budget"}
    )
    assert patched.status_code == 200 and patched.json()["description"] == "done / budget"
    assert patched.json()["id"] == uid
    frozen = server.request("PATCH", f"/v1/knowledge/{uid}", "ops", json={"name": "other"})
    assert frozen.status_code == 422 and "name" in frozen.json()["detail"]

    deleted = server.request("DELETE", f"/v1/knowledge/{uid}", "ops")
    assert deleted.status_code == 200 and deleted.json()["inactive"] is True
    assert server.request("GET", "/v1/knowledge", "ops").json()["count"] == 0
    inactive = server.request("GET", "/v1/knowledge", "ops", params={"active": "false"}).json()
    assert [e["id"] for e in inactive["items"]] == [uid]

    audit = server.request("GET", "/v1/audit", "admin", params={"ukf_id": uid}).json()["items"]
    assert [(a["action"], a["user"], a["ukf_ids"]) for a in audit] == [
        ("delete", "ops", [uid]),
        ("update", "ops", [uid]),
        ("create", "ops", [uid]),
    ]
    assert audit[1]["detail"] == {"fields": ["description"]}
    assert audit[0]["store_version"] > audit[2]["store_version"]


def test_list_filters_by_type_tag_and_synonym_prefix(server):
    server.state.store.upsert_many(every_template())
    by_type = server.request("GET", "/v1/knowledge", "analyst", params={"type": "table"}).json()
    assert [e["name"] for e in by_type["items"]] == ["sales_ledger_nova"]
    tagged = server.request(
        "GET", "/v1/knowledge", "analyst", params={"tag": "[TABLE:sales_ledger_nova]", "limit": 3}
    ).json()
    assert tagged["count"] == 3 and tagged["limit"] == 3
    prefix = server.request(
        "GET", "/v1/knowledge", "analyst", params={"synonym_prefix": "nova 2"}
    ).json()
    assert [e["type"] for e in prefix["items"]] == ["enum"]


def test_the_four_search_modes(server):
    entries = every_template()
    server.state.store.upsert_many(entries)
    server.state.indices.refresh(wait=True)
    by_type = {e.type: e for e in entries}

    def search(**body):
        reply = server.request("POST", "/v1/knowledge/search", "analyst", json=body)
        assert reply.status_code == 200, reply.text
        return reply.json()["hits"]

    spans = search(mode="string", query="How did Nova 200 sell?")
    enum_hit = next(h for h in spans if h["id"] == by_type["enum"].id)
    assert enum_hit["reason"] == "span" and enum_hit["phrase"] == "Nova 200"
    assert enum_hit["type"] == "enum" and enum_hit["span"] == [8, 16]
    assert {h["type"] for h in search(mode="string", query="Nova 200", type=["enum"])} == {"enum"}

    facets = search(mode="facet", tags=["[TABLE:sales_ledger_nova]"], type=["column"])
    assert {h["name"] for h in facets} == {"model", "region"}

    vectors = search(mode="vector", query="Nova revenue last month?", type=["experience"])
    assert vectors[0]["id"] == by_type["experience"].id and vectors[0]["reason"] == "vector"

    graph = search(mode="graph", seeds=[by_type["enum"].id], hops=2, type=["table"])
    assert [h["id"] for h in graph] == [by_type["table"].id]
    full = search(mode="graph", seeds=[by_type["enum"].id], include="entry", limit=1)
    assert full[0]["entry"]["id"] == full[0]["id"]

    bad = server.request("POST", "/v1/knowledge/search", "analyst", json={"mode": "string"})
    assert bad.status_code == 422 and "query" in bad.text
    unknown = server.request(
        "POST",
        "/v1/knowledge/search",
        "analyst",
        json={"mode": "vector", "query": "x", "serializers": ["nope"]},
    )
    assert unknown.status_code == 422 and "nope" in unknown.json()["detail"]


def test_a_new_entry_is_searchable_right_after_the_write(server):
    server.request("POST", "/v1/knowledge", "ops", json=_entry(synonyms=["burn multiple"]))
    hits = server.request(
        "POST", "/v1/knowledge/search", "analyst", json={"mode": "string", "query": "burn multiple"}
    ).json()["hits"]
    assert [h["name"] for h in hits] == ["BCR"]


def test_import_then_export_round_trips_and_is_audited(server, tmp_path):
    source = tmp_path / "kb.jsonl"
    write_jsonl(every_template(), source)
    refused = server.request("POST", "/v1/knowledge/import", "ops", content=source.read_bytes())
    assert refused.status_code == 403 and "finance" in refused.text  # read-only auths
    assert server.state.store.count() == 0
    imported = server.request(
        "POST",
        "/v1/knowledge/import",
        "admin",  # admins may write entries whose auths they are not listed in
        content=source.read_bytes(),
        headers={"content-type": "application/x-ndjson"},
    )
    assert imported.status_code == 200 and imported.json()["imported"] == 12
    exported = server.request("GET", "/v1/knowledge/export", "admin")
    assert exported.headers["content-type"].startswith("application/x-ndjson")
    lines = exported.text.splitlines()
    assert sorted(lines) == sorted(source.read_text().splitlines())  # canonical JSON
    ids = [json.loads(line)["id"] for line in lines]
    assert ids == sorted(ids)
    only_tables = server.request("GET", "/v1/knowledge/export", "ops", params={"type": "table"})
    assert len(only_tables.text.splitlines()) == 1
    visible = server.request("GET", "/v1/knowledge/export", "ops").text.splitlines()
    assert len(visible) == 11  # one entry is for the finance group only
    audit = server.request("GET", "/v1/audit", "admin", params={"action": "import"}).json()
    assert (
        audit["items"][0]["entry_count"] == 12 and audit["items"][0]["detail"]["source"] == "http"
    )


def test_visibility_between_two_users(server):
    alice = server.key("analyst", "alice", workspace="emea")
    bob = server.key("analyst", "bob", workspace="apac")
    emea_ops = server.key("ops", "olga", workspace="emea")
    hr_ops = server.key("ops", "hana", workspace="emea", groups=["hr"])
    team = server.request("POST", "/v1/knowledge", emea_ops, json=_entry(workspace="emea"))
    assert team.status_code == 201
    hr_only = [{"user": "hr", "authority": "write"}]
    salary = _entry("salary", workspace="emea", auths=hr_only)
    private = server.request("POST", "/v1/knowledge", hr_ops, json=salary)
    assert private.status_code == 201
    # global entries: written by keys without a workspace (see test_security_knowledge.py)
    globe = server.request("POST", "/v1/knowledge", "ops", json=_entry("glossary"))
    team_id, private_id, global_id = team.json()["id"], private.json()["id"], globe.json()["id"]

    def seen(key):
        listed = server.request("GET", "/v1/knowledge", key).json()["items"]
        return {e["id"] for e in listed}

    assert seen(alice) == {team_id, global_id}
    assert seen(bob) == {global_id}
    assert seen(hr_ops) == {team_id, private_id, global_id}
    assert server.request("GET", f"/v1/knowledge/{team_id}", bob).status_code == 404
    assert server.request("GET", f"/v1/knowledge/{private_id}", alice).status_code == 404
    for body in (
        {"mode": "string", "query": "budget completion rate"},
        {"mode": "facet", "tags": ["[DATABASE:autofin]"]},
        {"mode": "vector", "query": "budget completion rate"},
        {"mode": "graph", "seeds": [team_id, private_id, global_id], "hops": 1},
    ):
        hits = server.request("POST", "/v1/knowledge/search", bob, json=body).json()["hits"]
        assert {h["id"] for h in hits} <= {global_id}, body
    exported = server.request("GET", "/v1/knowledge/export", bob).text.splitlines()
    assert [json.loads(line)["id"] for line in exported] == [global_id]

    # writes: only in one's own workspace, and auths need write authority
    apac_ops = server.key("ops", "oscar", workspace="apac")
    elsewhere = server.request("POST", "/v1/knowledge", apac_ops, json=_entry(workspace="emea"))
    assert elsewhere.status_code == 403 and "workspace" in elsewhere.json()["detail"]
    assert server.request("DELETE", f"/v1/knowledge/{team_id}", apac_ops).status_code == 404
    reader_only = server.request(
        "POST",
        "/v1/knowledge",
        emea_ops,
        json=_entry("read only", workspace="emea", auths=[{"user": "olga", "authority": "read"}]),
    )
    assert reader_only.status_code == 403 and "write or admin" in reader_only.json()["detail"]
    assert server.request("DELETE", f"/v1/knowledge/{private_id}", emea_ops).status_code == 404
    assert server.state.store.count() == 3


def _snapshot(server) -> tuple[int, int, list]:
    store = server.state.store
    return store.version, store.count(active=None), [e.id for e in store.iterate(active=None)]


def test_bad_inputs_are_refused_and_leave_the_store_unchanged(server):
    server.request("POST", "/v1/knowledge", "ops", json=_entry())
    before = _snapshot(server)
    uid = before[2][0]
    ops = {"content-type": "application/json"}
    cases = [
        ("POST", "/v1/knowledge", {"content": b'{"name": "x",', "headers": ops}, 400),
        ("PATCH", f"/v1/knowledge/{uid}", {"content": b"{not json", "headers": ops}, 400),
        ("POST", "/v1/knowledge/search", {"content": b"[", "headers": ops}, 400),
        ("POST", "/v1/knowledge", {"json": ["not", "an", "object"]}, 422),
        ("POST", "/v1/knowledge", {"json": {"type": "gizmo", "name": "x"}}, 422),
        ("POST", "/v1/knowledge", {"json": {"name": ""}}, 422),
        ("POST", "/v1/knowledge", {"json": {**_entry("x"), "id": "0" * 32}}, 422),
        ("PATCH", f"/v1/knowledge/{uid}", {"json": {"priority": "high"}}, 422),
        ("PATCH", "/v1/knowledge/unknown", {"json": {"description": "x"}}, 404),
        ("DELETE", "/v1/knowledge/unknown", {}, 404),
        ("GET", "/v1/knowledge/unknown", {}, 404),
        ("POST", "/v1/knowledge", {"json": {**_entry("big"), "content": "x" * 1_100_000}}, 413),
        ("POST", "/v1/knowledge/search", {"json": {"mode": "string", "query": "q" * 2001}}, 422),
        ("POST", "/v1/knowledge/search", {"json": {"mode": "nope", "query": "x"}}, 422),
        ("GET", "/v1/knowledge", {"params": {"limit": 0}}, 422),
        ("GET", "/v1/knowledge", {"params": {"tag": "no brackets"}}, 422),
    ]
    for method, path, kwargs, status in cases:
        reply = server.request(method, path, "ops", **kwargs)
        assert reply.status_code == status, (method, path, reply.status_code, reply.text[:200])
        assert "detail" in reply.json()
    assert _snapshot(server) == before


def test_a_bad_import_names_the_line_and_writes_nothing(server):
    before = _snapshot(server)
    good = KnowledgeUKF.create("ok", "fine").to_json()
    for body, expected in (
        (f"{good}\n{{broken\n", "line 2"),
        (f"{good}\n" + json.dumps({"type": "gizmo", "name": "x"}) + "\n", "line 2"),
        (b"\xff\xfe", "UTF-8"),
    ):
        reply = server.request(
            "POST",
            "/v1/knowledge/import",
            "ops",
            content=body.encode() if isinstance(body, str) else body,
        )
        assert reply.status_code in (400, 422) and expected in reply.json()["detail"]
    hidden = KnowledgeUKF.create("theirs", "x", workspace="apac").to_json()
    refused = server.request("POST", "/v1/knowledge/import", "ops", content=f"{good}\n{hidden}\n")
    assert refused.status_code == 403
    assert _snapshot(server) == before


def test_imports_may_be_larger_than_other_bodies_up_to_their_own_limit(make_server):
    server = make_server(limits={"max_body_bytes": 4_000, "max_import_bytes": 60_000})
    lines = "".join(KnowledgeUKF.create(f"term {i}", "x" * 100).to_json() + "\n" for i in range(20))
    assert 4_000 < len(lines) < 60_000
    assert server.request("POST", "/v1/knowledge/import", "ops", content=lines).status_code == 200
    too_big = server.request("POST", "/v1/knowledge/import", "ops", content=lines * 20)
    assert too_big.status_code == 413
    chunked = server.request(
        "POST", "/v1/knowledge/import", "ops", content=iter([lines.encode()] * 20)
    )
    assert chunked.status_code == 413  # no Content-Length: counted while streaming
    assert server.state.store.count() == 20
