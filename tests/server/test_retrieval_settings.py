"""The ``[retrieval]`` settings: read from TOML and the environment, checked, and reaching the
retrievers of the server's asks and of the CLI's commands."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from indices.embeddings import HashingEmbedder
from indices.retriever import RetrievalOptions
from kb.store import KnowledgeStore
from server.settings import Settings
from server.settings_retrieval import RetrievalSettings
from server.state import build_state, configured_indices
from tests.agents.scripted import ScriptedLLM, sql_reply
from tests.server.conftest import make_settings, running_server
from tests.server.test_ask_api import NORTH, QUESTION, Tiers, profile_shop
from ukf import MetricUKF

MINED = {"mining": {"job_id": "job-1", "miner": "labeled", "status": "activated"}}


def test_toml_and_environment_fill_the_retrieval_options(tmp_path, monkeypatch):
    config = tmp_path / "almanac.toml"
    config.write_text("[retrieval]\nbudget_tokens = 900\nmined_by_facet = true\n")
    monkeypatch.setenv("ALMANAC_CONFIG", str(config))
    monkeypatch.setenv("ALMANAC_RETRIEVAL__EXPERIENCES", "5")
    options = Settings(data_dir=tmp_path).retrieval.options()
    assert options == RetrievalOptions(budget_tokens=900, experiences=5, mined_by_facet=True)
    monkeypatch.setenv("ALMANAC_CONFIG", str(tmp_path / "absent.toml"))
    monkeypatch.delenv("ALMANAC_RETRIEVAL__EXPERIENCES")
    assert Settings(data_dir=tmp_path).retrieval.options() == RetrievalOptions()


def test_bad_retrieval_settings_are_refused_with_the_offending_value():
    with pytest.raises(ValidationError, match=r"experience_tokens \(2000\) exceeds budget_tokens"):
        RetrievalSettings(experience_tokens=2000)
    with pytest.raises(ValidationError, match="budget_tokens"):
        RetrievalSettings(budget_tokens=0)
    with pytest.raises(ValidationError, match="mined_by_facets"):
        RetrievalSettings(mined_by_facets=True)  # a typo is not ignored


def test_the_cli_indices_retrieve_with_the_settings(tmp_path, store_url):
    settings = make_settings(tmp_path, store_url, retrieval={"budget_tokens": 700, "hops": 1})
    with KnowledgeStore(store_url) as store:
        retriever = configured_indices(store, settings).retriever()
    assert retriever.options == RetrievalOptions(budget_tokens=700, hops=1)


@pytest.mark.parametrize("mined_by_facet", [False, True])
def test_the_servers_asks_show_facet_only_mined_knowledge_as_the_setting_says(
    tmp_path, store_url, sqlite_target, mined_by_facet
):
    """A mined metric nothing in the question names reaches the prompt (and the answer's
    knowledge) only with ``retrieval.mined_by_facet``; the server's default leaves it out."""
    profile_shop(store_url, sqlite_target)
    mined = MetricUKF.create("churn quotient", "COUNT(*)", database="shop", metadata=MINED)
    with KnowledgeStore(store_url) as store:
        store.upsert(mined)
    retrieval = {"mined_by_facet": True} if mined_by_facet else {}
    settings = make_settings(
        tmp_path,
        store_url,
        target_url=sqlite_target,
        target_name="shop",
        llm_tiers=[{"name": "default"}],
        retrieval=retrieval,
    )
    llm = ScriptedLLM([sql_reply(NORTH)])
    state = build_state(settings, embedder=HashingEmbedder(), llms=Tiers(default=llm))
    with running_server(state) as server:
        reply = server.request("POST", "/v1/ask", "analyst", json={"question": QUESTION})
    assert reply.status_code == 200, reply.text
    used = {k["id"] for k in reply.json()["knowledge"]}
    assert (mined.id in used) is mined_by_facet
    prompt = "\n".join(m["content"] for m in llm.calls[0][0])
    assert ("churn quotient" in prompt) is mined_by_facet
