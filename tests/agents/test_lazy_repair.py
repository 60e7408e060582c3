"""A voting tier repairs a failed sample only while the repair could change the vote (scripted
models over the real concert_singer database)."""

from __future__ import annotations

import pytest

from agents.sql.cascade import Cascade
from agents.sql.tier_run import NOT_REPAIRED_NOTE
from tests.agents.scripted import ScriptedTogetherLLM, sql_reply
from tests.agents.test_cascade import COUNT, rag, tier  # noqa: F401  (rag is a fixture)

BROKEN = "SELECT nope FROM singer"


def replies(by_seed: dict[int, str]):
    """Each sample's SQL by its seed; a repair (the conversation shows the database's
    rejection) answers with the right count."""

    def reply(messages, options):
        if "rejected" in messages[-1]["content"]:
            return sql_reply(COUNT)
        return sql_reply(by_seed[options["seed"]])

    return reply


def vote_of_five(database, by_seed):
    llm = ScriptedTogetherLLM([replies(by_seed)])
    return llm, tier("m", llm, database, samples=5, stop_early=False, together=5)


def test_failed_samples_that_cannot_change_the_vote_are_not_repaired(concert, rag):  # noqa: F811
    llm, single = vote_of_five(concert[1], {0: COUNT, 1: COUNT, 2: COUNT, 3: BROKEN, 4: BROKEN})
    outcome = Cascade([single], dialect="sqlite").run(rag)
    assert len(llm.calls) == 5  # the five samples, no repair
    assert outcome.winner.results.rows == [(6,)] and outcome.confidence == pytest.approx(0.6)
    failed = [c for c in outcome.candidates if not c.ok]
    assert [c.sample for c in failed] == [3, 4]
    assert all(NOT_REPAIRED_NOTE in c.notes and c.repairs == 0 for c in failed)
    assert [c.sample for c in outcome.candidates] == [0, 1, 2, 3, 4]


def test_repairs_go_on_while_they_could_change_the_vote(concert, rag):  # noqa: F811
    # two right, three broken: the broken ones could outvote the two, so the first is
    # repaired; once it joins the two, the other broken ones cannot change the answer
    llm, single = vote_of_five(concert[1], {0: COUNT, 1: BROKEN, 2: COUNT, 3: BROKEN, 4: BROKEN})
    outcome = Cascade([single], dialect="sqlite").run(rag)
    assert len(llm.calls) == 6  # the five samples and one repair
    repaired = next(c for c in outcome.candidates if c.sample == 1)
    assert repaired.ok and repaired.repairs == 1
    assert all(NOT_REPAIRED_NOTE in c.notes for c in outcome.candidates if c.sample in (3, 4))
    assert outcome.winner.results.rows == [(6,)] and outcome.confidence == pytest.approx(0.6)


def test_without_a_leader_every_failed_sample_is_repaired(concert, rag):  # noqa: F811
    llm, single = vote_of_five(concert[1], {i: BROKEN for i in range(5)})
    outcome = Cascade([single], dialect="sqlite").run(rag)
    # the first two repairs agree; from then on three unsettled samples could still outvote
    # them (2 > 0 + 3 is false), so the third is repaired too; then 3 > 0 + 2 settles it
    assert len(llm.calls) == 5 + 3
    assert [c.repairs for c in outcome.candidates] == [1, 1, 1, 0, 0]
    assert outcome.winner.results.rows == [(6,)]


def test_repair_all_repairs_every_failed_sample(concert, rag):  # noqa: F811
    llm, single = vote_of_five(concert[1], {0: COUNT, 1: COUNT, 2: COUNT, 3: BROKEN, 4: BROKEN})
    single.refiner.options.repair_all = True
    outcome = Cascade([single], dialect="sqlite").run(rag)
    assert len(llm.calls) == 7  # the five samples and both repairs
    assert outcome.confidence == 1.0 and not any(
        NOT_REPAIRED_NOTE in c.notes for c in outcome.candidates
    )
