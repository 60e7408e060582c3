"""The knowledge API's additions for the web page: GET /v1/knowledge/{id}/text (an entry as
the question prompts render it) and an import refused with every bad line named."""

from __future__ import annotations

import json

from ukf import KnowledgeUKF


def test_an_entry_is_rendered_by_its_default_composer(server):
    entry = KnowledgeUKF.create("BCR", "Budget completion rate", synonyms=["budget completion"])
    body = {"type": "knowledge", **entry.model_dump(mode="json", exclude_defaults=True)}
    uid = server.request("POST", "/v1/knowledge", "ops", json=body).json()["id"]
    reply = server.request("GET", f"/v1/knowledge/{uid}/text", "analyst")
    assert reply.status_code == 200, reply.text
    rendered = reply.json()
    assert rendered["id"] == uid and rendered["composer"] == "knowledge"
    assert rendered["text"] == server.state.store.get(uid).text()
    assert "BCR" in rendered["text"]


def test_an_entry_the_caller_cannot_see_has_no_text(server):
    entry = KnowledgeUKF.create("secret", "Only mine", owner="ops")
    body = {"type": "knowledge", **entry.model_dump(mode="json", exclude_defaults=True)}
    created = server.request("POST", "/v1/knowledge", "ops", json=body)
    assert created.status_code == 201, created.text
    uid = created.json()["id"]
    assert server.request("GET", f"/v1/knowledge/{uid}/text", "ops").status_code == 200
    assert server.request("GET", f"/v1/knowledge/{uid}/text", "analyst").status_code == 404
    assert server.request("GET", "/v1/knowledge/nope/text", "analyst").status_code == 404


def test_a_refused_import_names_every_bad_line(server):
    good = KnowledgeUKF.create("ok", "fine").to_json()
    body = "\n".join(
        [good, "{broken", good, json.dumps({"type": "gizmo", "name": "x"}), "", '{"name": ""}']
    )
    before = server.state.store.version
    reply = server.request("POST", "/v1/knowledge/import", "ops", content=body.encode())
    assert reply.status_code == 422, reply.text
    refusal = reply.json()
    assert [e["line"] for e in refusal["errors"]] == [2, 4, 6] and refusal["error_count"] == 3
    assert refusal["errors"][0]["error"].startswith("invalid JSON")
    assert "gizmo" in refusal["errors"][1]["error"] and "name" in refusal["errors"][2]["error"]
    assert refusal["detail"].startswith("3 lines not valid, nothing was imported: line 2: ")
    assert server.state.store.version == before
    fine = server.request("POST", "/v1/knowledge/import", "ops", content=f"{good}\n".encode())
    assert fine.status_code == 200 and fine.json()["imported"] == 1


def test_a_list_page_may_carry_the_total_it_is_a_page_of(server):
    for name in ("alpha", "beta", "gamma"):
        entry = KnowledgeUKF.create(name, "x", database="pages")
        body = {"type": "knowledge", **entry.model_dump(mode="json", exclude_defaults=True)}
        assert server.request("POST", "/v1/knowledge", "ops", json=body).status_code == 201
    query = {"tag": "[DATABASE:pages]", "limit": 2}
    page = server.request("GET", "/v1/knowledge", "analyst", params=query).json()
    assert page["count"] == 2 and "total" not in page
    page = server.request(
        "GET", "/v1/knowledge", "analyst", params={**query, "offset": 2, "total": "true"}
    ).json()
    assert page["count"] == 1 and page["total"] == 3
