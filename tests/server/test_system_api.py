"""/v1/health and /v1/metrics (Prometheus text): requests, stage latency, LLM tokens, jobs."""

from __future__ import annotations

import re

import pytest

from kb.migrations import LATEST_VERSION

pytestmark = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
# a Prometheus sample: name{labels} value, the value a float (8.98e-05 too), +Inf, -Inf or NaN
SAMPLE = re.compile(
    r'^[a-z_]+(\{([a-z_]+="[^"]*",?)*\})? ([+-]?Inf|NaN|-?[0-9]+(\.[0-9]*)?(e[+-]?[0-9]+)?)$'
)


def test_health_without_a_key_says_only_the_status(server):
    for headers in ({}, server.headers("analyst"), server.headers("ml")):
        reply = server.client.get("/v1/health", headers=headers)
        assert reply.status_code == 200 and reply.json() == {"status": "ready"}, headers
    bad = server.client.get("/v1/health", headers={"Authorization": "Bearer alm_nope_nope"})
    assert bad.status_code == 401


def test_health_reports_the_store_indices_jobs_and_workers(server):
    reply = server.request("GET", "/v1/health", "ops")  # details need the metrics permission
    assert reply.status_code == 200
    body = reply.json()
    assert body["status"] == "ready" and body["store"]["ok"] is True
    assert (
        body["store"]["schema_version"] == LATEST_VERSION and body["store"]["backend"] == "sqlite"
    )
    assert body["indices"]["ready"] is True
    assert body["jobs"]["queued"] == 0 and len(body["workers"]) == 1
    assert body["target"] is None and body["llm_tiers"] == []


def test_metrics_count_requests_stages_jobs_and_gauges(server):
    server.request("GET", "/v1/knowledge", "analyst")
    server.request("GET", "/v1/knowledge/nope", "analyst")
    server.request("POST", "/v1/knowledge/search", "analyst", json={"mode": "string", "query": "x"})
    job = server.request("POST", "/v1/jobs", "ops", json={"kind": "reindex"}).json()
    assert server.wait_job(job["id"])["state"] == "succeeded"
    reply = server.request("GET", "/v1/metrics", "ops")
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = reply.text
    assert 'almanac_http_requests_total{method="GET",route="/v1/knowledge",status="200"} 1' in text
    assert (
        'almanac_http_requests_total{method="GET",route="/v1/knowledge/{ukf_id}",status="404"} 1'
        in text
    )
    assert 'almanac_stage_duration_seconds_count{stage="search.string"} 1' in text
    assert 'almanac_stage_duration_seconds_count{stage="job.reindex"} 1' in text
    assert 'almanac_jobs_finished_total{kind="reindex",state="succeeded"} 1' in text
    assert 'almanac_jobs{state="succeeded"} 1' in text
    bucket = 'almanac_http_request_duration_seconds_bucket{method="GET",route="/v1/knowledge"'
    assert f'{bucket},le="+Inf"}} 1' in text
    for line in text.splitlines():
        assert line.startswith("# ") or SAMPLE.match(line), line


def test_metrics_can_be_public(make_server):
    server = make_server(metrics_public=True)
    assert server.client.get("/v1/metrics").status_code == 200
    assert "store" in server.client.get("/v1/health").json()  # and so are the health details
