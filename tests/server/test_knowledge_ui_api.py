"""GET /v1/knowledge/{id}/text: an entry rendered as the question prompts show it."""

from __future__ import annotations

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
