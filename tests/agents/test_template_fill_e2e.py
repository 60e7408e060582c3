"""End to end with the embedded 0.5B model: labeled GeoQuery questions mined into a query
template, activated; a question of its shape is answered from it without the model, one of
another shape goes to the model as before."""

from __future__ import annotations

import pytest

from agents.learn.mine import activate, mine_labeled
from agents.llm.base import LLMWrapper
from agents.pipeline import ModelTier, Pipeline
from indices.embeddings import HashingEmbedder
from indices.index_set import IndexSet
from tests.agents.learn.conftest import GEOQUERY, labeled, profiled
from tests.agents.test_template_fill import STATE_POPULATION, STATES

pytestmark = pytest.mark.slow  # the real model answers the question of another shape


class CountingLLM(LLMWrapper):
    """The real model, counting its calls."""

    def __init__(self, inner) -> None:
        self.inner, self.name, self.calls = inner, inner.name, 0

    def chat(self, messages, **options):
        self.calls += 1
        return self.inner.chat(messages, **options)

    def chat_variants(self, messages, variants, **options):
        self.calls += 1
        return self.inner.chat_variants(messages, variants, **options)


@pytest.fixture
def geo(tmp_path):
    store, database = profiled(tmp_path, GEOQUERY, "geoquery")
    yield store, database
    database.close()
    store.close()


def test_a_mined_template_answers_its_shape_and_the_model_the_rest(geo, embedded_llm):
    store, database = geo
    experiences = [labeled(q, STATE_POPULATION.format(v)) for q, v in STATES.items()]
    store.upsert_many(experiences)
    report = mine_labeled(store, experiences, job_id="e2e", targets={"geoquery": database})
    assert report.mined["template"] == 1
    assert activate(store, report.candidate_ids)
    llm = CountingLLM(embedded_llm)
    pipeline = Pipeline(
        store=store,
        retriever=IndexSet.build(store, HashingEmbedder()).retriever(),
        database=database,
        database_name="geoquery",
        tiers=[ModelTier("0.5b", llm)],
    )

    answer = pipeline.ask("what is the population of hawaii")
    assert llm.calls == 0 and answer.tier == "template" and answer.rows == [[964000]]

    other = pipeline.ask("which state has the capital austin")
    assert llm.calls >= 1 and other.tier != "template"
    assert all(c.template_id is None for c in other.candidates) and other.candidates
