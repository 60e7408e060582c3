"""The real thing: the embedded model answers on concert_singer, the packaged calibrator
turns the answer's signals (the model's own token log probabilities included) into a
confidence, an unanswerable question abstains with its reason, and adaptive sampling
draws more only when unsure."""

from __future__ import annotations

import pytest

from agents.confidence.assess import ConfidenceAssessor, ConfidenceOptions
from agents.pipeline import ModelTier, Pipeline
from indices.embeddings import HashingEmbedder
from indices.index_set import IndexSet

pytestmark = pytest.mark.slow


def test_the_embedded_model_is_confident_where_it_can_be_and_abstains_where_it_cannot(
    concert, embedded_llm
):
    store, database, _ = concert
    pipeline = Pipeline(
        store=store,
        retriever=IndexSet.build(store, HashingEmbedder()).retriever(),
        database=database,
        database_name="concert_singer",
        tiers=[ModelTier("embedded", embedded_llm)],
        confidence=ConfidenceAssessor(
            store,
            "concert_singer",
            # target 0.5, not the default 0.1: an abstaining answer (under 0.3) must be unsure
            # enough to draw more samples, whatever its confidence under 0.3
            options=ConfidenceOptions(abstain_below=0.3, adaptive=True, max_samples=3, target=0.5),
        ),
    )
    easy = pipeline.ask("How many singers do we have?")
    assert easy.executed and easy.rows == [[6]] and not easy.abstained
    assert easy.signals["logprob_mean"] < 0 and easy.signals["span_coverage"] == 1.0
    assert easy.calibrator is not None and 0 < easy.confidence <= 1

    unanswerable = pipeline.ask("What is the average salary of the singers?")
    # the model may write SQL that fails (no salary column) or that answers something else
    assert unanswerable.abstained and unanswerable.rows == []
    assert unanswerable.confidence < easy.confidence
    reasons = unanswerable.abstention.reasons
    assert "nothing in the database concert_singer matches 'salary'" in reasons
    # unsure after the greedy answer, so more samples were drawn (up to the budget, and a
    # plain-prompt retry when none ran)
    assert 1 < unanswerable.samples <= 4
