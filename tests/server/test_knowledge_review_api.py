"""The review queue of learned knowledge over HTTP, on SQLite and PostgreSQL stores holding
GeoQuery's profile and candidates mined from labeled questions: the role matrix, 404/409/422,
approve (then searchable), reject (then not re-added by re-mining), edit, and rollback."""

from __future__ import annotations

from typing import Any

import pytest

from agents.learn.credit import BlameThreshold, apply_verdict
from agents.learn.mine import mine_labeled
from kb.profile.profiler import ProfileOptions, profile_database
from kb.store import KnowledgeStore
from kb.target.database import Database
from tests.agents.learn.conftest import GEOQUERY, HOUSTON, NC, SPOT, labeled
from tests.server.conftest import Server

REVIEW = "/v1/knowledge/review"


def mine(store: KnowledgeStore, *questions: tuple[str, str, str | None], job_id: str) -> None:
    experiences = [labeled(q, sql, workspace=ws) for q, sql, ws in questions]
    store.upsert_many(experiences)
    with Database(f"sqlite:///{GEOQUERY}") as db:
        mine_labeled(store, experiences, job_id=job_id, targets={"geoquery": db})


@pytest.fixture()
def geo_server(make_server, store_url) -> Server:
    """A server over a store with GeoQuery profiled and three candidates of job ``job-1``
    (``NC`` in workspace ``sales``, ``lowest spot`` and ``houston`` global); ``server.ids``
    maps their names to ids, ``sales`` is an ops key working in ``sales`` and ``reader`` an
    analyst there."""
    if not GEOQUERY.is_file():
        pytest.skip(f"benchmark database {GEOQUERY} not found (set ALMANAC_BENCH_DATA)")
    with KnowledgeStore(store_url) as store, Database(f"sqlite:///{GEOQUERY}") as db:
        profile_database(
            db, store, database_name="geoquery", options=ProfileOptions(progress=False)
        )
        mine(store, (*NC, "sales"), (*SPOT, None), (*HOUSTON, None), job_id="job-1")
        ids = {e.name: e.id for e in store.iterate(source="auto", active=None)}
    server = make_server()
    server.ids = ids  # type: ignore[attr-defined]
    server.keys["sales"] = server.key("ops", user="sam", workspace="sales")
    server.keys["reader"] = server.key("analyst", user="ana", workspace="sales")
    return server


def waiting(server: Server, as_: str = "admin", **params: Any) -> list[str]:
    reply = server.request("GET", REVIEW, as_, params=params)
    assert reply.status_code == 200, reply.text
    return [item["id"] for item in reply.json()["items"]]


def searchable(server: Server, question: str) -> list[str]:
    """What an analyst of workspace ``sales`` finds (global entries and ``sales``'s)."""
    reply = server.request(
        "POST", "/v1/knowledge/search", "reader", json={"mode": "string", "query": question}
    )
    assert reply.status_code == 200, reply.text
    return [hit["id"] for hit in reply.json()["hits"]]


def audited(server: Server, action: str) -> list[Any]:
    return server.state.audit.list(action=action)


# ------------------------------------------------------------------------ the role matrix
# route → (method, path template, body); {id} is the entry the callers act on
ROUTES: dict[str, tuple[str, str, dict[str, Any] | None]] = {
    "list": ("GET", REVIEW, None),
    "detail": ("GET", REVIEW + "/{id}", None),
    "approve": ("POST", REVIEW + "/{id}/approve", None),
    "reject": ("POST", REVIEW + "/{id}/reject", {"reason": "not a synonym"}),
    "edit": ("PATCH", REVIEW + "/{id}", {"synonyms": ["lowest place"]}),
    "rollback": ("POST", REVIEW + "/rollback", {"job_id": "job-1"}),
}
# what each caller gets acting on a global entry: analysts and ml keys may not review; a
# workspace-scoped ops key does not see global entries (404) but lists and rolls back its own
SCOPED_STATUS = {"list": 200, "rollback": 200}


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_the_role_matrix(geo_server: Server, route: str) -> None:
    method, template, body = ROUTES[route]
    spot, houston = geo_server.ids["lowest spot"], geo_server.ids["houston"]

    def call(caller: str, entry: str) -> Any:
        return geo_server.request(method, template.format(id=entry), caller, json=body)

    for caller in ("analyst", "ml"):
        reply = call(caller, spot)
        assert reply.status_code == 403, (caller, reply.text)
    assert call("sales", spot).status_code == SCOPED_STATUS.get(route, 404)
    assert spot in waiting(geo_server)  # nobody refused changed anything

    assert call("ops", spot).status_code == 200
    assert call("admin", houston).status_code == 200
    if route in ("approve", "reject"):
        assert {spot, houston}.isdisjoint(waiting(geo_server))
        action = f"review.knowledge.{route}"
        assert {r.user for r in audited(geo_server, action)} == {"ops", "admin"}


def test_a_workspace_key_sees_and_decides_its_workspace_only(geo_server: Server) -> None:
    nc, spot = geo_server.ids["NC"], geo_server.ids["lowest spot"]
    assert waiting(geo_server, "sales") == [nc]
    assert set(waiting(geo_server, "ops")) == set(geo_server.ids.values())
    detail = geo_server.request("GET", f"{REVIEW}/{nc}", "sales").json()
    assert detail["workspace"] == "sales" and detail["sources"][0]["question"] == NC[0]

    assert geo_server.request("POST", f"{REVIEW}/{spot}/approve", "sales").status_code == 404
    assert geo_server.request("POST", f"{REVIEW}/{nc}/approve", "sales").status_code == 200
    rolled = geo_server.request("POST", f"{REVIEW}/rollback", "sales", json={"job_id": "job-1"})
    assert rolled.json()["rolled_back"] == [nc]  # its own workspace's entry only
    assert spot in waiting(geo_server, "ops")


# --------------------------------------------------------------------------- the errors
def test_unknown_ids_are_404_entries_not_waiting_are_409_bad_bodies_are_422(
    geo_server: Server,
) -> None:
    unknown, spot = "0" * 32, geo_server.ids["lowest spot"]
    column = geo_server.state.store.search(type="column", limit=1)[0].id

    def status(method: str, path: str, **kwargs: Any) -> int:
        return int(geo_server.request(method, path, "ops", **kwargs).status_code)

    for entry, expected in ((unknown, 404), (column, 409)):
        assert status("GET", f"{REVIEW}/{entry}") == expected
        assert status("POST", f"{REVIEW}/{entry}/approve") == expected
        assert status("POST", f"{REVIEW}/{entry}/reject") == expected
        assert status("PATCH", f"{REVIEW}/{entry}", json={"content": "x"}) == expected
    assert status("POST", f"{REVIEW}/rollback", json={"job_id": "no-such-job"}) == 404

    for body in ({"name": "x"}, {}, {"priority": "high"}, {"synonyms": [""]}, [1]):
        assert status("PATCH", f"{REVIEW}/{spot}", json=body) == 422, body
    for body in ({}, {"job_id": ""}, {"job": "job-1"}):
        assert status("POST", f"{REVIEW}/rollback", json=body) == 422, body
    assert status("POST", f"{REVIEW}/{spot}/reject", json={"reason": 5}) == 422
    assert status("GET", REVIEW, params={"reason": "bored"}) == 422
    assert status("GET", REVIEW, params={"limit": 0}) == 422

    assert status("POST", f"{REVIEW}/{spot}/approve") == 200
    assert status("POST", f"{REVIEW}/{spot}/approve") == 409
    assert status("POST", f"{REVIEW}/{spot}/reject") == 409


# ------------------------------------------------------------------------- the decisions
def test_listing_filters_and_pages_with_provenance(geo_server: Server) -> None:
    reply = geo_server.request("GET", REVIEW, "ops", params={"limit": 2}).json()
    assert reply["total"] == 3 and reply["count"] == 2
    item = reply["items"][0]
    assert item["reasons"] == ["candidate"] and item["job_id"] == "job-1"
    assert item["miner"] == "labeled" and item["trust"] == "labeled" and item["how"]
    assert item["database"] == "geoquery" and len(item["sources"]) == 1
    assert len(waiting(geo_server, "ops", limit=2, offset=2)) == 1
    assert set(waiting(geo_server, "ops", type="predicate")) == {geo_server.ids["houston"]}
    assert waiting(geo_server, "ops", job_id="job-2") == []
    assert waiting(geo_server, "ops", database="world_1") == []
    assert waiting(geo_server, "ops", reason="blamed") == []

    spot = geo_server.ids["lowest spot"]
    detail = geo_server.request("GET", f"{REVIEW}/{spot}", "ops").json()
    (source,) = detail["sources"]
    assert (source["question"], source["sql"], source["labeled"]) == (*SPOT, True)
    assert detail["entry"]["id"] == spot and detail["entry"]["inactive_mark"]


def test_approving_makes_an_entry_searchable_and_is_audited(geo_server: Server) -> None:
    nc = geo_server.ids["NC"]
    assert nc not in searchable(geo_server, NC[0])
    reply = geo_server.request("POST", f"{REVIEW}/{nc}/approve", "admin")
    assert reply.status_code == 200
    assert reply.json()["active"] and reply.json()["status"] == "active"
    assert nc in searchable(geo_server, NC[0])
    assert nc not in waiting(geo_server)
    (record,) = audited(geo_server, "review.knowledge.approve")
    assert record.ukf_ids == [nc] and record.user == "admin"
    assert record.store_version == reply.json()["store_version"]


def test_a_rejected_entry_stays_out_when_the_log_is_mined_again(geo_server: Server) -> None:
    houston, store = geo_server.ids["houston"], geo_server.state.store
    reply = geo_server.request("POST", f"{REVIEW}/{houston}/reject", "ops", json={"reason": "no"})
    assert reply.status_code == 200 and not reply.json()["active"]
    assert reply.json()["status"] == "rejected"
    assert audited(geo_server, "review.knowledge.reject")[0].detail["reason"] == "no"
    count = store.count(active=None)

    mine(store, (*HOUSTON, None), job_id="job-2")
    assert store.count(active=None) == count
    assert houston not in waiting(geo_server)
    geo_server.state.indices.refresh(wait=True)
    assert houston not in searchable(geo_server, HOUSTON[0])


def test_an_edit_changes_a_waiting_entry_and_is_audited(geo_server: Server) -> None:
    spot = geo_server.ids["lowest spot"]
    reply = geo_server.request(
        "PATCH", f"{REVIEW}/{spot}", "ops", json={"synonyms": ["lowest place"]}
    )
    assert reply.status_code == 200, reply.text
    assert reply.json()["id"] == spot and reply.json()["synonyms"] == ["lowest place"]
    assert reply.json()["metadata"]["edits"][0]["by"] == "ops"
    assert spot in waiting(geo_server)  # still waiting
    (record,) = audited(geo_server, "review.knowledge.edit")
    assert record.detail == {"fields": ["synonyms"]} and record.ukf_ids == [spot]

    geo_server.request("POST", f"{REVIEW}/{spot}/approve", "ops")
    assert spot in searchable(geo_server, "what is the lowest place in texas")


def test_rollback_takes_back_what_a_job_activated(geo_server: Server) -> None:
    ids = geo_server.ids
    for name in ("NC", "lowest spot"):
        assert (
            geo_server.request("POST", f"{REVIEW}/{ids[name]}/approve", "admin").status_code == 200
        )
    assert ids["NC"] in searchable(geo_server, NC[0])
    assert ids["lowest spot"] in searchable(geo_server, SPOT[0])

    reply = geo_server.request("POST", f"{REVIEW}/rollback", "ops", json={"job_id": "job-1"})
    assert reply.status_code == 200
    assert sorted(reply.json()["rolled_back"]) == sorted([ids["NC"], ids["lowest spot"]])
    assert ids["NC"] not in searchable(geo_server, NC[0])
    assert ids["lowest spot"] not in searchable(geo_server, SPOT[0])
    rolled = waiting(geo_server, reason="rolled_back")
    assert set(rolled) == {ids["NC"], ids["lowest spot"]}
    (record,) = audited(geo_server, "review.rollback")
    assert record.detail == {"job_id": "job-1"} and len(record.ukf_ids) == 2


def test_blamed_knowledge_waits_in_the_same_queue(geo_server: Server) -> None:
    spot, store = geo_server.ids["lowest spot"], geo_server.state.store
    assert geo_server.request("POST", f"{REVIEW}/{spot}/approve", "ops").status_code == 200
    apply_verdict(store, [spot], "blame", threshold=BlameThreshold(min_blame=1))

    (item,) = geo_server.request("GET", REVIEW, "ops", params={"reason": "blamed"}).json()["items"]
    assert item["id"] == spot and item["reasons"] == ["blamed"] and not item["active"]
    assert item["feedback"]["blame"] == 1 and item["review"]["status"] == "pending"
    reply = geo_server.request("POST", f"{REVIEW}/{spot}/approve", "ops")
    assert reply.status_code == 200 and reply.json()["review"]["status"] == "approved"
    assert spot in searchable(geo_server, SPOT[0])
