"""Security regressions of knowledge writes (issue 20, items 1 and 4a), on SQLite and PostgreSQL.

1. An ops key overwrote, through import (sync and job), a global entry hidden from it by auths,
   and learnt from ``POST`` (409) that the entry existed.
4a. An ops key scoped to a workspace could PATCH and DELETE global entries (what every workspace
   sees).

The rule under test (see :mod:`server.access`): a write to an id the caller cannot see is
refused exactly like a write to an id that does not exist (PATCH/DELETE: 404), or, for POST and
import, with a 403 that does not say the id is stored; global entries are written by admin keys
and keys without a workspace only.
"""

from __future__ import annotations

import json
import time

from tests.support.samples import every_template
from ukf import KnowledgeUKF

ADMINS_ONLY = [{"user": "admins", "authority": "admin"}]
ATTACK = {
    "type": "knowledge",
    "name": "guarded-policy",
    "creator": "root",
    "source": "user",
    "content": "PWNED via import",
    "priority": 100,
}


def _guarded(server) -> tuple[str, str]:
    """An admin key in group ``admins`` and the id of its global, admins-only entry."""
    admin = server.key("admin", "root", groups=["admins"])
    body = {**ATTACK, "content": "only admins may change this", "auths": ADMINS_ONLY}
    created = server.request("POST", "/v1/knowledge", admin, json=body)
    assert created.status_code == 201, created.text
    return admin, created.json()["id"]


def _as_admin_sees(server, admin: str, uid: str) -> dict:
    reply = server.request("GET", f"/v1/knowledge/{uid}", admin)
    assert reply.status_code == 200, reply.text
    return reply.json()


def _unchanged(server, admin: str, uid: str, before: dict) -> None:
    after = _as_admin_sees(server, admin, uid)
    assert after == before
    assert after["content"] == "only admins may change this" and after["auths"] == ADMINS_ONLY


def _submit(server, kind: str, params: dict, as_: str = "ops") -> dict:
    reply = server.request("POST", "/v1/jobs", as_, json={"kind": kind, "params": params})
    assert reply.status_code == 202, reply.text
    return server.wait_job(reply.json()["id"])


def test_an_ops_key_cannot_read_patch_or_delete_an_entry_hidden_from_it(server):
    admin, uid = _guarded(server)
    before = _as_admin_sees(server, admin, uid)
    unknown = "0" * 32
    for method, kwargs in (("GET", {}), ("PATCH", {"json": {"content": "x"}}), ("DELETE", {})):
        hidden = server.request(method, f"/v1/knowledge/{uid}", "ops", **kwargs)
        absent = server.request(method, f"/v1/knowledge/{unknown}", "ops", **kwargs)
        assert hidden.status_code == absent.status_code == 404, (method, hidden.text)
        assert hidden.json()["detail"].replace(uid, unknown) == absent.json()["detail"]
    _unchanged(server, admin, uid, before)


def test_post_of_a_hidden_id_is_refused_without_revealing_that_it_exists(server):
    admin, uid = _guarded(server)
    before = _as_admin_sees(server, admin, uid)
    reply = server.request("POST", "/v1/knowledge", "ops", json=ATTACK)
    assert reply.status_code == 403, reply.text  # was 409 "exists already; PATCH it instead"
    detail = reply.json()["detail"]
    assert "exist" not in detail.lower() and "admins" not in detail and "PATCH" not in detail
    _unchanged(server, admin, uid, before)


def test_import_cannot_overwrite_an_entry_hidden_from_the_importer(server):
    admin, uid = _guarded(server)
    before = _as_admin_sees(server, admin, uid)
    version = server.state.store.version
    line = json.dumps(ATTACK)
    reply = server.request("POST", "/v1/knowledge/import", "ops", content=line + "\n")
    assert reply.status_code == 403, reply.text  # was 200, imported: 1
    detail = reply.json()["detail"]
    assert "line 1" in detail and "exist" not in detail.lower() and "admins" not in detail

    good = KnowledgeUKF.create("harmless", "fine").to_json()
    mixed = server.request("POST", "/v1/knowledge/import", "ops", content=f"{good}\n\n{line}\n")
    assert mixed.status_code == 403 and "line 3" in mixed.json()["detail"]
    assert server.state.store.version == version  # all or nothing: the good line is not written
    assert server.state.store.count(active=None) == 1
    _unchanged(server, admin, uid, before)


def test_an_import_job_cannot_overwrite_an_entry_hidden_from_its_submitter(server, tmp_path):
    admin, uid = _guarded(server)
    before = _as_admin_sees(server, admin, uid)
    inline = _submit(server, "import", {"jsonl": json.dumps(ATTACK)})
    assert inline["state"] == "failed" and "line 1" in inline["error"], inline
    folder = tmp_path / "imports"
    folder.mkdir()
    (folder / "attack.jsonl").write_text(json.dumps(ATTACK) + "\n")
    from_file = _submit(server, "import", {"path": "attack.jsonl"})
    assert from_file["state"] == "failed" and "line 1" in from_file["error"], from_file
    assert "exist" not in from_file["error"].lower()
    _unchanged(server, admin, uid, before)


def test_import_cannot_revive_a_deleted_entry_hidden_from_the_importer(server):
    admin, uid = _guarded(server)
    assert server.request("DELETE", f"/v1/knowledge/{uid}", admin).status_code == 200
    reply = server.request("POST", "/v1/knowledge/import", "ops", content=json.dumps(ATTACK))
    assert reply.status_code == 403, reply.text
    stored = server.state.store.get(uid)
    assert stored.content == "only admins may change this" and stored.auths
    assert server.state.store.count() == 0  # still inactive


def test_a_visible_read_only_entry_is_not_replaced_by_import_either(server):
    admin = server.key("admin", "root", groups=["admins"])
    readable = [{"user": "ops", "authority": "read"}]
    body = {**ATTACK, "content": "read it, do not change it", "auths": readable}
    uid = server.request("POST", "/v1/knowledge", admin, json=body).json()["id"]
    assert server.request("GET", f"/v1/knowledge/{uid}", "ops").status_code == 200
    reply = server.request("POST", "/v1/knowledge/import", "ops", content=json.dumps(ATTACK))
    assert reply.status_code == 403 and "write" in reply.json()["detail"], reply.text
    patch = server.request("PATCH", f"/v1/knowledge/{uid}", "ops", json={"content": "x"})
    assert patch.status_code == 403
    posted = server.request("POST", "/v1/knowledge", "ops", json=ATTACK)
    assert posted.status_code == 403 and "write" in posted.json()["detail"]  # visible: says why
    assert server.state.store.get(uid).content == "read it, do not change it"


def test_a_workspace_key_cannot_write_global_entries(server):
    emea_ops = server.key("ops", "olga", workspace="emea")
    created = server.request("POST", "/v1/knowledge", "ops", json={**ATTACK, "content": "v1"})
    assert created.status_code == 201  # an ops key without a workspace writes globally
    uid = created.json()["id"]
    assert server.request("GET", f"/v1/knowledge/{uid}", emea_ops).status_code == 200
    version = server.state.store.version

    patch = server.request("PATCH", f"/v1/knowledge/{uid}", emea_ops, json={"content": "mine"})
    assert patch.status_code == 403 and "workspace" in patch.json()["detail"], patch.text
    delete = server.request("DELETE", f"/v1/knowledge/{uid}", emea_ops)
    assert delete.status_code == 403 and "workspace" in delete.json()["detail"], delete.text
    new_global = {**ATTACK, "name": "new global", "content": "x"}
    post = server.request("POST", "/v1/knowledge", emea_ops, json=new_global)
    assert post.status_code == 403 and "'emea'" in post.json()["detail"], post.text
    line = json.dumps({**ATTACK, "content": "overwritten"})
    imported = server.request("POST", "/v1/knowledge/import", emea_ops, content=line)
    assert imported.status_code == 403 and "line 1" in imported.json()["detail"]
    job = _submit(server, "import", {"jsonl": line}, as_=emea_ops)
    assert job["state"] == "failed" and "workspace" in job["error"], job

    assert server.state.store.version == version
    stored = server.state.store.get(uid)
    assert stored.content == "v1" and not stored.inactive_mark


def test_a_workspace_key_may_not_start_jobs_that_write_global_knowledge(server):
    emea_ops = server.key("ops", "olga", workspace="emea")
    for kind in ("profile", "describe"):
        reply = server.request("POST", "/v1/jobs", emea_ops, json={"kind": kind})
        assert reply.status_code == 403 and "global" in reply.json()["detail"], reply.text
    assert server.request("GET", "/v1/jobs", "ops").json()["count"] == 0


# ------------------------------------------------------------------- what still works
def test_admins_import_curated_packs_with_auths_and_replace_hidden_entries(server):
    admin, uid = _guarded(server)
    pack = "".join(entry.to_json() + "\n" for entry in every_template())
    reply = server.request("POST", "/v1/knowledge/import", "admin", content=pack)
    assert reply.status_code == 200 and reply.json()["imported"] == 12, reply.text
    again = server.request("POST", "/v1/knowledge/import", "admin", content=pack)
    assert again.status_code == 200  # re-importing over entries hidden from the admin key
    line = json.dumps({**ATTACK, "content": "new policy", "auths": ADMINS_ONLY})
    assert server.request("POST", "/v1/knowledge/import", admin, content=line).status_code == 200
    assert _as_admin_sees(server, admin, uid)["content"] == "new policy"


def test_an_ops_key_without_a_workspace_writes_global_entries(server):
    body = {**ATTACK, "content": "v1"}
    uid = server.request("POST", "/v1/knowledge", "ops", json=body).json()["id"]
    patched = server.request("PATCH", f"/v1/knowledge/{uid}", "ops", json={"content": "v2"})
    assert patched.status_code == 200 and patched.json()["content"] == "v2"
    line = json.dumps({**ATTACK, "content": "v3"})
    assert server.request("POST", "/v1/knowledge/import", "ops", content=line).status_code == 200
    assert server.request("GET", f"/v1/knowledge/{uid}", "analyst").json()["content"] == "v3"
    assert server.request("DELETE", f"/v1/knowledge/{uid}", "ops").status_code == 200
    shared = [{"user": "ops", "authority": "write"}]
    guarded = {**ATTACK, "name": "shared", "auths": shared}
    assert server.request("POST", "/v1/knowledge", "ops", json=guarded).status_code == 201
    line = json.dumps({**guarded, "content": "changed by a writer"})
    assert server.request("POST", "/v1/knowledge/import", "ops", content=line).status_code == 200


def test_a_workspace_key_writes_its_workspace_layer_which_overlays_the_global_one(server):
    emea_ops = server.key("ops", "olga", workspace="emea")
    emea_analyst = server.key("analyst", "alice", workspace="emea")
    apac_analyst = server.key("analyst", "bob", workspace="apac")
    server.request("POST", "/v1/knowledge", "ops", json={**ATTACK, "content": "global"})
    local = {**ATTACK, "workspace": "emea", "content": "emea v1"}
    created = server.request("POST", "/v1/knowledge", emea_ops, json=local)
    assert created.status_code == 201, created.text
    uid = created.json()["id"]
    patched = server.request("PATCH", f"/v1/knowledge/{uid}", emea_ops, json={"content": "emea v2"})
    assert patched.status_code == 200
    line = json.dumps({**local, "content": "emea v3"})
    assert server.request("POST", "/v1/knowledge/import", emea_ops, content=line).status_code == 200
    job = _submit(
        server, "import", {"jsonl": json.dumps({**local, "content": "emea v4"})}, emea_ops
    )
    assert job["state"] == "succeeded", job

    def seen(key: str) -> list[str]:
        items = server.request("GET", "/v1/knowledge", key, params={"name": "guarded-policy"})
        return [e["content"] for e in items.json()["items"]]

    deadline = time.monotonic() + 5
    while seen(emea_analyst) != ["emea v4"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert seen(emea_analyst) == ["emea v4"] and seen(apac_analyst) == ["global"]
    assert server.request("DELETE", f"/v1/knowledge/{uid}", emea_ops).status_code == 200
    assert seen(emea_analyst) == ["global"]
