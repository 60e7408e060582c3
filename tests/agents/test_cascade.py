"""The cascade and test-time scaling loop, with scripted models over a real database."""

from __future__ import annotations

import threading
import time

import pytest

from agents.rag.agent import RagAgent
from agents.rag.schema_slice import SchemaCatalog
from agents.sql.cascade import Cascade, Tier
from agents.sql.generate import SqlGenerator
from agents.sql.refine import Refiner
from tests.agents.scripted import ScriptedLLM, ScriptedTogetherLLM, sql_reply

COUNT = "SELECT count(*) FROM singer"
FRANCE = "SELECT name FROM singer WHERE country = 'France'"
WRONG = "SELECT count(*) FROM stadium"


def tier(name, llm, database, samples=2, **kw) -> Tier:
    return Tier(name, SqlGenerator(llm, "sqlite"), Refiner(database, llm), samples, **kw)


def by_seed(table: dict[int, str]):
    """Reply with table[seed] (the seed is the sample index)."""
    return lambda messages, options: sql_reply(table[options["seed"]])


@pytest.fixture
def rag(concert):
    store, _, retriever = concert
    return RagAgent(retriever, SchemaCatalog(store, "concert_singer")).run("How many singers?")


def test_two_agreeing_small_samples_answer_without_the_large_tier(concert, rag):
    _, database, _ = concert
    small = ScriptedLLM([by_seed({0: COUNT, 1: "SELECT COUNT(singer_id) FROM singer"})])
    large = ScriptedLLM([sql_reply(WRONG)], name="large")
    outcome = Cascade(
        [tier("small", small, database, samples=3), tier("large", large, database)],
        dialect="sqlite",
    ).run(rag)
    assert outcome.tier == "small" and outcome.winner.results.rows == [(6,)]
    assert outcome.tiers_tried == ["small"] and outcome.cancelled == 1
    assert len(small.calls) == 2 and large.calls == []
    assert outcome.confidence == 1.0


def test_disagreement_escalates_and_the_last_tier_votes(concert, rag):
    _, database, _ = concert
    small = ScriptedLLM([by_seed({0: COUNT, 1: WRONG})], name="small")
    large = ScriptedLLM([by_seed({0: FRANCE, 1: FRANCE})], name="large")
    outcome = Cascade(
        [tier("small", small, database), tier("large", large, database)], dialect="sqlite"
    ).run(rag)
    assert outcome.tiers_tried == ["small", "large"] and outcome.tier == "large"
    assert "France" in outcome.winner.sql
    assert len(outcome.candidates) == 4


def test_empty_results_do_not_count_as_agreement(concert, rag):
    _, database, _ = concert
    nothing = "SELECT name FROM singer WHERE age > 1000"
    small = ScriptedLLM([sql_reply(nothing)], name="small")
    large = ScriptedLLM([sql_reply(COUNT)], name="large")
    refine_off = {"rounds": 0}
    tiers = [tier("small", small, database), tier("large", large, database, samples=1)]
    for t in tiers:
        t.refiner.options.rounds = refine_off["rounds"]
    outcome = Cascade(tiers, dialect="sqlite").run(rag)
    assert outcome.tier == "large" and outcome.winner.results.rows == [(6,)]


def test_a_tier_that_can_no_longer_agree_escalates_without_its_last_sample(concert, rag):
    _, database, _ = concert
    small = ScriptedLLM([by_seed({0: "SELECT nope FROM singer", 1: COUNT, 2: COUNT})])
    large = ScriptedLLM([sql_reply(COUNT)], name="large")
    tiers = [tier("small", small, database), tier("large", large, database, samples=1)]
    tiers[0].refiner.options.rounds = 0  # the failed greedy SQL stays failed
    outcome = Cascade(tiers, dialect="sqlite").run(rag)
    assert len(small.calls) == 1 and outcome.cancelled == 1  # one sample left: cannot agree
    assert outcome.tier == "large" and outcome.winner.results.rows == [(6,)]
    three = [tier("small", ScriptedLLM(small.replies), database, samples=3), tiers[1]]
    three[0].refiner.options.rounds = 0
    outcome = Cascade(three, dialect="sqlite").run(rag)
    assert outcome.tier == "small" and outcome.winner.results.rows == [(6,)]  # two left: agree


def test_all_failed_gives_an_empty_vote(concert, rag):
    _, database, _ = concert
    garbage = ScriptedLLM(["I am not sure what you mean."])
    single = tier("only", garbage, database, samples=3, stop_early=False)
    single.refiner.options.rounds = 1
    outcome = Cascade([single], dialect="sqlite").run(rag)
    assert outcome.winner is None and outcome.confidence == 0.0
    # three samples, then the plain-prompt retry: all failed
    assert len(outcome.candidates) == 4 and all(not c.ok for c in outcome.candidates)
    assert outcome.candidates[-1].tier == "only:plain" and not outcome.plain_fallback
    single = tier("only", ScriptedLLM(["No idea."]), database, samples=3, stop_early=False)
    single.refiner.options.rounds = 1
    outcome = Cascade([single], dialect="sqlite", plain_fallback=False).run(rag)
    assert outcome.winner is None and len(outcome.candidates) == 3


def test_a_plain_prompt_retries_when_the_evidence_misled_every_candidate(concert, rag):
    _, database, _ = concert
    assert rag.hints  # the RAG prompt has a Knowledge section

    def misled_by_hints(messages, options):
        # messages[1] is the question's prompt, in repairs too
        if "### Knowledge" in messages[1]["content"]:
            return sql_reply("SELECT count(*) FROM singer JOIN nowhere")
        return sql_reply(COUNT)

    llm = ScriptedLLM([misled_by_hints])
    single = tier("m", llm, database, samples=2, stop_early=False)
    outcome = Cascade([single], dialect="sqlite").run(rag)
    assert outcome.plain_fallback and outcome.tier == "m:plain"
    assert outcome.winner.results.rows == [(6,)] and outcome.confidence == 0.5
    assert all(not c.ok for c in outcome.candidates[:-1]) and len(outcome.candidates) == 3
    plain_prompt = llm.calls[-1][0][1]["content"]
    assert "### Knowledge" not in plain_prompt and "### Schema" in plain_prompt


def test_tts_draws_every_sample_and_takes_the_majority(concert, rag):
    _, database, _ = concert
    llm = ScriptedLLM([by_seed({0: WRONG, 1: COUNT, 2: COUNT, 3: WRONG, 4: COUNT})])
    outcome = Cascade(
        [tier("m", llm, database, samples=5, stop_early=False)], dialect="sqlite"
    ).run(rag)
    assert len(llm.calls) == 5 and outcome.winner.results.rows == [(6,)]
    assert outcome.confidence == pytest.approx(0.6)
    temperatures = [options["temperature"] for _, options in llm.calls]
    assert temperatures[0] == 0.0 and all(t > 0 for t in temperatures[1:])


def test_parallel_samples_are_cancelled_once_two_agree(concert, rag):
    _, database, _ = concert
    started = []
    lock = threading.Lock()

    def slow_after_two(messages, options):
        with lock:
            started.append(options["seed"])
        if options["seed"] >= 2:
            time.sleep(0.5)
        return sql_reply(COUNT)

    llm = ScriptedLLM([slow_after_two])
    small = tier("small", llm, database, samples=8, parallel=2)
    large = tier("large", ScriptedLLM([sql_reply(WRONG)]), database)
    outcome = Cascade([small, large], dialect="sqlite").run(rag)
    assert outcome.tier == "small" and outcome.cancelled >= 5
    assert len(started) < 8


def test_a_cascade_tier_must_sample_at_least_twice(concert):
    _, database, _ = concert
    llm = ScriptedLLM([sql_reply(COUNT)])
    with pytest.raises(ValueError, match=">= 2 samples"):
        Cascade([tier("a", llm, database, samples=1), tier("b", llm, database)], dialect="sqlite")


def test_a_tier_drawn_together_asks_once_and_refines_each(concert, rag):
    _, database, _ = concert
    small = ScriptedTogetherLLM([by_seed({0: COUNT, 1: "SELECT COUNT(singer_id) FROM singer"})])
    large = ScriptedLLM([sql_reply(WRONG)], name="large")
    tiers = [tier("small", small, database, together=2), tier("large", large, database)]
    outcome = Cascade(tiers, dialect="sqlite").run(rag)
    assert outcome.tier == "small" and outcome.winner.results.rows == [(6,)]
    assert len(small.batches) == 1 and len(small.calls) == 2 and large.calls == []
    assert all(c.ok and c.tier == "small" for c in outcome.candidates)


def test_a_batch_stops_refining_once_two_can_no_longer_agree(concert, rag):
    _, database, _ = concert
    small = ScriptedTogetherLLM([by_seed({0: "SELECT nope FROM singer", 1: COUNT})])
    large = ScriptedLLM([sql_reply(COUNT)], name="large")
    tiers = [tier("small", small, database, together=2), tier("large", large, database, samples=1)]
    tiers[0].refiner.options.rounds = 0
    outcome = Cascade(tiers, dialect="sqlite").run(rag)
    # greedy failed: the other sample of the batch cannot agree with anything, so it is not run
    assert [c.sample for c in outcome.candidates if c.tier == "small"] == [0]
    assert outcome.tier == "large" and outcome.winner.results.rows == [(6,)]


def test_tts_in_batches_draws_every_sample(concert, rag):
    _, database, _ = concert
    llm = ScriptedTogetherLLM([by_seed({0: WRONG, 1: COUNT, 2: COUNT, 3: WRONG, 4: COUNT})])
    single = tier("m", llm, database, samples=5, stop_early=False, together=2)
    outcome = Cascade([single], dialect="sqlite").run(rag)
    assert [len(b) for b in llm.batches] == [2, 2] and len(llm.calls) == 5  # the last alone
    assert [c.sample for c in outcome.candidates] == [0, 1, 2, 3, 4]
    first, second = outcome.candidates[:2]  # one joint decode, its time in equal shares
    assert first.generate_seconds == second.generate_seconds > 0
    assert outcome.winner.results.rows == [(6,)] and outcome.confidence == pytest.approx(0.6)
