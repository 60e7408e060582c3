"""``almanac kb review``: the review queue of learned knowledge from the command line, on a
GeoQuery store with mined candidates."""

from __future__ import annotations

import json

from agents.learn.mine import mine_labeled
from server.audit import AuditLog
from server.cli import main
from tests.agents.learn.conftest import HOUSTON, NC, SPOT, geo, labeled  # noqa: F401  (geo is a fixture)


def test_list_show_approve_reject_and_rollback_from_the_command_line(geo, tmp_path, capsys):  # noqa: F811
    store, db = geo
    experiences = [labeled(q, sql) for q, sql in (NC, SPOT, HOUSTON)]
    store.upsert_many(experiences)
    mine_labeled(store, experiences, job_id="job-1", targets={"geoquery": db})
    ids = {e.name: e.id for e in store.iterate(source="auto", active=None)}
    base = ["--data-dir", str(tmp_path), "--store-url", store.url, "kb", "review"]

    def run(*args: str) -> tuple[int, str, str]:
        code = main([*base, *args])
        out, err = capsys.readouterr()
        return code, out, err

    code, out, _ = run("list", "--json")
    listed = json.loads(out)
    assert code == 0 and listed["total"] == 3
    assert {item["id"] for item in listed["items"]} == set(ids.values())
    code, out, _ = run("list", "--type", "predicate")
    assert code == 0 and "1 entries waiting" in out and ids["houston"] in out

    code, out, _ = run("show", ids["lowest spot"])
    assert code == 0 and SPOT[0] in out and SPOT[1] in out and "job job-1" in out

    code, out, _ = run("approve", ids["NC"], ids["lowest spot"], "--json")
    assert code == 0 and json.loads(out)["approved"] == [ids["NC"], ids["lowest spot"]]
    assert not store.get(ids["NC"]).inactive_mark
    code, out, _ = run("reject", ids["houston"], "--reason", "city, not a phrase")
    assert code == 0 and out.strip() == "rejected 1 entries"
    assert store.get(ids["houston"]).metadata["mining"]["status"] == "rejected"

    code, _, err = run("approve", ids["NC"])  # decided already
    assert code == 2 and "not in the review queue" in err and ids["NC"] in err
    code, _, err = run("show", "0" * 32)
    assert code == 2 and "no knowledge entry" in err

    code, out, _ = run("rollback", "job-1", "--json")
    assert code == 0
    assert sorted(json.loads(out)["rolled_back"]) == sorted([ids["NC"], ids["lowest spot"]])
    assert store.get(ids["NC"]).inactive_mark
    code, out, _ = run("list", "--reason", "rolled_back", "--json")
    assert {item["id"] for item in json.loads(out)["items"]} == {ids["NC"], ids["lowest spot"]}

    records = AuditLog(store._engine).list()
    actions = [r.action for r in records]
    assert actions.count("review.knowledge.approve") == 2 and "review.rollback" in actions
    assert all(r.detail["by"].startswith("cli:") for r in records if r.action.startswith("review"))
