"""A describe job reports progress per describer call and stops within one call when it is
cancelled, writing nothing."""

from __future__ import annotations

import time
from typing import Any

from kb.profile.model import ColumnProfile, Description, TableProfile
from tests.server.conftest import ScriptedDescriber


class SlowDescriber(ScriptedDescriber):
    """Every call takes 0.2 s, like a (fast) LLM call."""

    def describe_table(self, table: TableProfile) -> Description:
        time.sleep(0.2)
        return super().describe_table(table)

    def describe_column(self, table: TableProfile, column: ColumnProfile) -> Description:
        time.sleep(0.2)
        return super().describe_column(table, column)

    def describe_enum(self, table: TableProfile, column: ColumnProfile, value: Any) -> Description:
        time.sleep(0.2)
        return super().describe_enum(table, column, value)


def test_a_describe_job_moves_and_stops_within_one_describer_call(make_server, sqlite_target):
    describer = SlowDescriber()
    server = make_server(target_url=sqlite_target, describer_factory=lambda: describer)
    reply = server.request("POST", "/v1/jobs", "ops", json={"kind": "describe", "params": {}})
    assert reply.status_code == 202, reply.text
    job_id = reply.json()["id"]
    seen: list[tuple[float, str]] = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        job = server.request("GET", f"/v1/jobs/{job_id}", "ops").json()
        assert job["state"] in ("queued", "running"), job
        if job["progress"] is not None:
            seen.append((job["progress"], job["message"] or ""))
        if len({m for _, m in seen if m.startswith("describing")}) >= 2:
            break
        time.sleep(0.05)
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] > 0.02, seen
    assert any(" of customers (1/2 tables)" in m for _, m in seen), seen
    calls_at_cancel = len(describer.calls)
    cancelled_at = time.monotonic()
    stopping = server.request("DELETE", f"/v1/jobs/{job_id}", "ops").json()
    assert stopping["cancel_requested"] is True
    job = server.wait_job(job_id)
    assert job["state"] == "cancelled", job
    assert time.monotonic() - cancelled_at < 2.0
    assert len(describer.calls) <= calls_at_cancel + 1  # only the call under way finished
    assert server.state.store.count(active=None) == 0  # nothing written
