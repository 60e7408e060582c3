"""The ``mine`` job end to end with the server's real small model (the 0.5B test model): the
LLM pairer through the describe tier, and the gate asking its held questions with the ask
tier."""

from __future__ import annotations

from typing import Any

import pytest

from agents.llm.models import TEST_MODEL, default_data_dir, pull
from indices.embeddings import HashingEmbedder
from server.state import build_state
from tests.agents.learn.conftest import GEOQUERY, labeled
from tests.agents.learn.test_gate import GOLD
from tests.server.conftest import make_settings, running_server
from tests.server.test_job_mine import DATABASE, _mined, _submit, experiences

__all__ = ["experiences"]  # the module fixture, shared with test_job_mine.py


def _real_model_state(tmp_path: Any, **overrides: Any) -> Any:
    """A server state on GeoQuery whose one tier is the real 0.5B test model (``overrides``:
    more settings)."""
    pull(TEST_MODEL, default_data_dir(), progress=False)
    (tmp_path / "models").symlink_to(default_data_dir() / "models")
    settings = make_settings(
        tmp_path,
        f"sqlite:///{tmp_path / 'knowledge.db'}",
        target_url=f"sqlite:///{GEOQUERY}",
        target_name=DATABASE,
        llm_tiers=[{"name": "default", "model": TEST_MODEL}],
        **overrides,
    )
    return build_state(settings, embedder=HashingEmbedder())


@pytest.mark.slow
def test_the_real_small_model_pairs_through_the_describe_tier(tmp_path, experiences):
    """End to end: the pairer is the describe tier of the server's own LLM tiers (the real
    0.5B test model), built as describe jobs build theirs."""
    state = _real_model_state(tmp_path)
    with running_server(state) as server:
        assert server.wait_job(_submit(server, {}, kind="profile"))["state"] == "succeeded"
        size = labeled(
            "what is the size of texas",
            "SELECT area FROM state WHERE state_name = 'texas'",
            database=DATABASE,
        )
        state.store.upsert_many([size])
        job = server.wait_job(_submit(server, {"llm_pairer": True}), timeout=600)
        assert job["state"] == "succeeded", job
        assert job["result"]["pairer_calls"] == 1 and job["result"]["experiences"] == 1
        (entry,) = _mined(state.store)
        assert (entry.name, entry.content) == ("size", "size means state.area")
        assert entry.metadata["mining"]["how"] == "llm"
        assert entry.metadata["mining"]["job_id"] == job["id"]


@pytest.mark.slow
def test_the_gate_runs_with_the_servers_real_small_model(tmp_path):
    """End to end: the gate asks the held questions with the server's own ask tier (the
    real 0.5B test model, background turns at the LLM gate) and decides every candidate."""
    if not GEOQUERY.is_file():
        pytest.skip(f"benchmark database {GEOQUERY} not found (set ALMANAC_BENCH_DATA)")
    state = _real_model_state(tmp_path)
    with running_server(state) as server:
        assert server.wait_job(_submit(server, {}, kind="profile"))["state"] == "succeeded"
        state.store.upsert_many(
            [labeled(q, sql, DATABASE, verified=True) for q, sql in GOLD.items()]
        )
        since = state.store.version
        source = labeled(
            "how many people live in NC",
            "SELECT s.population FROM state AS s WHERE s.state_name = 'north carolina'",
            DATABASE,
            verified=True,
        )
        state.store.upsert_many([source])
        job = server.wait_job(_submit(server, {"since_version": since, "gate": True}), timeout=900)
        assert job["state"] == "succeeded", job
        gate = job["result"]["gate"]
        assert gate["held"] == 3 and gate["asked"] >= 3 and not gate["cancelled"]
        decided = set(gate["activated"]) | set(gate["rejected"])
        assert decided == set(job["result"]["candidate_ids"]) and decided
        for entry in state.store.get_many(sorted(decided)).values():
            assert entry.metadata["mining"]["status"] in ("active", "rejected")
            assert "ex_with" in entry.metadata["mining"]["gate"]
