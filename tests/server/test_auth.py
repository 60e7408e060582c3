"""API keys and roles: hashed secrets, the 401/403 matrix over every endpoint, revocation,
and the per-key rate limit."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from kb import schema
from server.auth import ROLE_PERMISSIONS, Permission, Role
from server.keys import KeyStore, hash_secret, parse_key

R, W = Permission.KNOWLEDGE_READ, Permission.KNOWLEDGE_WRITE
JR, JW = Permission.JOBS_READ, Permission.JOBS_WRITE
SEARCH = {"mode": "facet", "tags": ["[DATABASE:none]"]}
ENDPOINTS = [
    ("GET", "/v1/metrics", None, {Permission.METRICS}),
    ("GET", "/v1/knowledge", None, {R}),
    ("GET", "/v1/knowledge/missing", None, {R}),
    ("GET", "/v1/knowledge/export", None, {R}),
    ("POST", "/v1/knowledge/search", SEARCH, {R}),
    ("POST", "/v1/knowledge", {"name": ""}, {W}),
    ("PATCH", "/v1/knowledge/missing", {"notes": "x"}, {W}),
    ("DELETE", "/v1/knowledge/missing", None, {W}),
    ("POST", "/v1/knowledge/import", None, {W}),
    ("POST", "/v1/jobs", {"kind": "reindex", "params": {"bad": 1}}, {JR, JW}),
    ("GET", "/v1/jobs", None, {JR}),
    ("GET", "/v1/jobs/missing", None, {JR}),
    ("DELETE", "/v1/jobs/missing", None, {JR}),
    ("POST", "/v1/keys", {"role": "nope", "user": "x"}, {Permission.KEYS}),
    ("GET", "/v1/keys", None, {Permission.KEYS}),
    ("DELETE", "/v1/keys/missing", None, {Permission.KEYS}),
    ("GET", "/v1/audit", None, {Permission.AUDIT}),
]


def _call(server, method, path, body, headers):
    return server.client.request(method, path, json=body, headers=headers)


def test_every_endpoint_needs_a_valid_key_and_the_right_role(server):
    revoked = server.key("admin", "gone")
    server.request("DELETE", f"/v1/keys/{parse_key(revoked)[0]}", "admin")
    key_id = parse_key(server.keys["admin"])[0]
    bad_keys = {
        "no key": {},
        "not a key": {"Authorization": "Bearer hello"},
        "wrong secret": {"Authorization": f"Bearer alm_{key_id}_{'x' * 43}"},
        "unknown id": {"X-API-Key": f"alm_{'0' * 12}_{'x' * 43}"},
        "revoked": {"Authorization": f"Bearer {revoked}"},
        "basic auth": {"Authorization": "Basic YWRtaW46YWRtaW4="},
    }
    before = server.state.store.version
    for method, path, body, needs in ENDPOINTS:
        for name, headers in bad_keys.items():
            reply = _call(server, method, path, body, headers)
            assert reply.status_code == 401, (method, path, name, reply.text)
            assert reply.headers["www-authenticate"].startswith("Bearer")
        for role in Role:
            reply = _call(server, method, path, body, server.headers(role.value))
            allowed = needs <= ROLE_PERMISSIONS[role]
            if allowed:
                assert reply.status_code not in (401, 403), (method, path, role, reply.text)
            else:
                assert reply.status_code == 403, (method, path, role, reply.text)
    assert server.state.store.version == before  # nothing was written by any of it
    assert server.client.get("/v1/health").status_code == 200  # no key needed


def test_roles_grant_what_the_issue_lists():
    assert ROLE_PERMISSIONS[Role.ANALYST] == {
        Permission.ASK,
        Permission.FEEDBACK,
        Permission.KNOWLEDGE_READ,
    }
    assert {Permission.JOBS_WRITE, Permission.KNOWLEDGE_WRITE} <= ROLE_PERMISSIONS[Role.OPS]
    assert Permission.KEYS not in ROLE_PERMISSIONS[Role.OPS]
    assert Permission.DISTILL in ROLE_PERMISSIONS[Role.ML]
    assert ROLE_PERMISSIONS[Role.ADMIN] == set(Permission)


def test_keys_are_stored_as_salted_peppered_hashes(server):
    created = server.request(
        "POST",
        "/v1/keys",
        "admin",
        json={"role": "analyst", "user": "ana", "workspace": "emea", "groups": ["fin"]},
    )
    assert created.status_code == 201
    body = created.json()
    secret = body["key"]
    key_id, raw = parse_key(secret)
    assert body["id"] == key_id and body["created_by"] == parse_key(server.keys["admin"])[0]
    with server.state.engine.connect() as conn:
        row = conn.execute(select(schema.api_keys).where(schema.api_keys.c.id == key_id)).one()
    assert raw not in " ".join(str(value) for value in row)
    assert row.secret_hash == hash_secret(raw, row.salt, b"test-pepper-0123456789abcdef")
    assert server.request("GET", "/v1/knowledge", secret).status_code == 200
    assert server.client.get("/v1/knowledge", headers={"X-API-Key": secret}).status_code == 200
    listed = server.request("GET", "/v1/keys", "admin").json()["items"]
    mine = next(k for k in listed if k["id"] == key_id)
    assert "key" not in mine and mine["groups"] == ["fin"] and mine["last_used_at"] is not None
    other_pepper = KeyStore(server.state.engine, b"another-pepper-0123456789")
    assert other_pepper.verify(secret) is None  # the database alone cannot check a key


def test_a_revoked_key_stops_working_at_once(server):
    secret = server.key("ops", "temp")
    assert server.request("GET", "/v1/jobs", secret).status_code == 200
    key_id = parse_key(secret)[0]
    revoked = server.request("DELETE", f"/v1/keys/{key_id}", "admin").json()
    assert revoked["active"] is False and revoked["revoked_at"]
    assert server.request("GET", "/v1/jobs", secret).status_code == 401
    assert key_id not in {
        k["id"] for k in server.request("GET", "/v1/keys", "admin").json()["items"]
    }
    everything = server.request("GET", "/v1/keys", "admin", params={"include_revoked": True})
    assert key_id in {k["id"] for k in everything.json()["items"]}
    assert server.request("DELETE", "/v1/keys/000000000000", "admin").status_code == 404


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_each_key_has_its_own_rate_limit(make_server):
    server = make_server(limits={"rate_per_s": 0.5, "rate_burst": 3})
    other = server.key("analyst", "other")
    replies = [server.request("GET", "/v1/knowledge", "analyst") for _ in range(4)]
    assert [r.status_code for r in replies] == [200, 200, 200, 429]
    assert int(replies[-1].headers["retry-after"]) >= 1
    assert "rate limit" in replies[-1].json()["detail"]
    assert server.request("GET", "/v1/knowledge", other).status_code == 200
    assert server.state.metrics.rate_limited.value() == 1
