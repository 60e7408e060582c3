"""A ``distill-data`` job cancelled over HTTP in the middle of its build: it ends
``cancelled``, writes nothing, and the earlier dataset of that name stays as it was (store on
SQLite and PostgreSQL, the real worker)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

import distill.dataset
from tests.distill.conftest import DB, SPIDER, experiences
from tests.server.conftest import Server

TARGET = SPIDER / "database" / DB / f"{DB}.sqlite"


def _submit(server: Server, name: str) -> str:
    body = {"kind": "distill-data", "params": {"name": name}}
    reply = server.request("POST", "/v1/jobs", "ml", json=body)
    assert reply.status_code == 202, reply.text
    return reply.json()["id"]


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture
def concert(make_server) -> Server:
    if not TARGET.is_file():
        pytest.skip(f"Spider database {TARGET} not found (set ALMANAC_BENCH_DATA)")
    server = make_server(target_url=f"sqlite:///{TARGET}", target_name=DB)
    reply = server.request("POST", "/v1/jobs", "ops", json={"kind": "profile", "params": {}})
    assert server.wait_job(reply.json()["id"])["state"] == "succeeded"
    server.state.store.upsert_many(experiences(8))
    return server


def test_a_cancelled_build_writes_nothing_and_keeps_the_earlier_dataset(concert, monkeypatch):
    server = concert
    first = server.wait_job(_submit(server, "cs"), "ml", timeout=120)
    assert first["state"] == "succeeded", first
    folder = Path(first["result"]["folder"])
    before = _files(folder)
    assert set(before) == {"manifest.json", "train.jsonl", "validation.jsonl"}

    # the second build stops after its second tuple until the test has cancelled the job
    made, stalled, cancelled = [], threading.Event(), threading.Event()
    tuple_of = distill.dataset._tuple

    def stalling(*args: Any) -> Any:
        made.append(args)
        if len(made) == 2:
            stalled.set()
            assert cancelled.wait(30), "the test never cancelled the job"
        return tuple_of(*args)

    monkeypatch.setattr(distill.dataset, "_tuple", stalling)
    job_id = _submit(server, "cs")
    assert stalled.wait(60), "the build never made two tuples"
    reply = server.request("DELETE", f"/v1/jobs/{job_id}", "ml")
    assert reply.status_code == 200, reply.text
    cancelled.set()
    job = server.wait_job(job_id, "ml", timeout=60)
    assert job["state"] == "cancelled", job
    assert len(made) == 2  # it stopped at the next experience, not at the end
    assert _files(folder) == before  # the earlier dataset, untouched
    assert sorted(p.name for p in folder.parent.iterdir()) == ["cs"]  # no half-written folder
