"""The ``mine`` job's ``unlabeled`` and ``both`` modes over HTTP on GeoQuery: questions asked
again by the vote through the server's own tier (scripted here, the real 0.5B in the slow
test), sure ones mined with trust ``unlabeled``, votes remembered, cancellation mid-vote."""

from __future__ import annotations

import itertools
import threading
from typing import Any

import pytest

from agents.confidence.assess import CalibratorSource
from agents.llm.base import LLMCancelledError, current_cancellation
from tests.agents.learn.conftest import GEOQUERY, labeled
from tests.agents.learn.test_gate import knowledge_of
from tests.agents.scripted import ScriptedLLM, ShareCalibrator, sql_reply
from tests.server.conftest import Server, running_server
from tests.server.test_job_mine import DATABASE, OneTier, _mined, _submit
from tests.server.test_job_mine_real_model import _real_model_state
from ukf import ExperienceUKF

HOUSTON = "how many people live in houston"
SPOT = "what is the lowest spot in texas"
VOTES = {
    HOUSTON: ["SELECT population FROM city WHERE city_name = 'houston'"],
    # three different results in five samples: no agreement
    SPOT: [
        "SELECT lowest_point FROM highlow WHERE state_name = 'texas'",
        "SELECT area FROM state WHERE state_name = 'texas'",
        "SELECT COUNT(*) FROM river",
    ],
}


def asked(question: str) -> ExperienceUKF:
    """An unlabeled experience as the ask path logs it (its SQL nobody checked)."""
    return ExperienceUKF.create(
        question, "SELECT 1", database=DATABASE, dialect="sqlite", source="user"
    )


class VotingLLM(ScriptedLLM):
    """Each question's scripted samples in turn."""

    def __init__(self) -> None:
        self.turns = {q: itertools.cycle(sqls) for q, sqls in VOTES.items()}
        super().__init__([self.reply])

    def reply(self, messages: Any, _options: Any) -> str:
        question, _ = knowledge_of(messages)
        return sql_reply(next(self.turns[question]) if question in self.turns else "SELECT 1")


@pytest.fixture()
def store_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'knowledge.db'}"


@pytest.fixture()
def voting(make_server, monkeypatch) -> Server:
    """GeoQuery profiled, two unlabeled questions and one labeled, a scripted tier whose
    vote's confidence is its share (a scripted model's signals say nothing)."""
    share = CalibratorSource(fallback=ShareCalibrator())  # type: ignore[arg-type]
    monkeypatch.setattr("server.mine_vote.calibrator_source", lambda _s: share)
    if not GEOQUERY.is_file():
        pytest.skip(f"benchmark database {GEOQUERY} not found (set ALMANAC_BENCH_DATA)")
    server = make_server(target_url=f"sqlite:///{GEOQUERY}", target_name=DATABASE)
    assert server.wait_job(_submit(server, {}, kind="profile"))["state"] == "succeeded"
    server.state.store.upsert_many([asked(HOUSTON), asked(SPOT)])
    server.state.llms = OneTier(VotingLLM())  # type: ignore[assignment]
    return server


def _experiences(server: Server) -> list[ExperienceUKF]:
    found = server.state.store.iterate(type="experience")
    return [e for e in found if isinstance(e, ExperienceUKF)]


def test_an_unlabeled_job_mines_the_sure_question_only_and_remembers_votes(voting):
    job = voting.wait_job(_submit(voting, {"mode": "unlabeled"}))
    assert job["state"] == "succeeded", job
    result = job["result"]
    assert result["miner"] == "unlabeled" and result["experiences"] == 2
    vote = result["vote"]
    assert (vote["asked"], vote["kept"], vote["refused"]) == (2, 1, 1)
    assert vote["refused_by"] == {"low agreement": 1} and vote["thresholds"]["samples"] == 5
    assert [s["reason"][:13] for s in result["skipped"]] == ["low agreement"]
    mined = _mined(voting.state.store)
    assert mined and {e.metadata["mining"]["trust"] for e in mined} == {"unlabeled"}
    assert all(e.metadata["mining"]["job_id"] == job["id"] for e in mined)
    experiences = _experiences(voting)
    assert len(experiences) == 2  # the votes were not logged as questions
    assert all(e.metadata["vote"]["samples"] == 5 for e in experiences)
    assert not any(e.labeled or e.verified for e in experiences)
    assert any(line["line"].startswith("unlabeled: mined 1/2") for line in job["log"])

    again = voting.wait_job(_submit(voting, {"mode": "unlabeled"}))
    assert again["state"] == "succeeded", again
    assert again["result"]["vote"]["asked"] == 0 and again["result"]["vote"]["remembered"] == 2
    assert again["result"]["merge"].get("inserted", 0) == 0


def test_mode_both_mines_labeled_then_unlabeled(voting):
    voting.state.store.upsert(
        labeled(
            "how many people live in NC",
            "SELECT population FROM state WHERE state_name = 'north carolina'",
            DATABASE,
        )
    )
    job = voting.wait_job(_submit(voting, {"mode": "both"}))
    assert job["state"] == "succeeded", job
    result = job["result"]
    assert result["miner"] == "labeled" and result["experiences"] == 1
    assert result["unlabeled"]["miner"] == "unlabeled" and result["unlabeled"]["experiences"] == 2
    trusts = {e.metadata["mining"]["trust"] for e in _mined(voting.state.store)}
    assert trusts == {"labeled", "unlabeled"}


def test_cancelled_mid_vote_the_job_ends_cancelled_and_mines_nothing(voting):
    stalled, errors = threading.Event(), []
    voter = VotingLLM()

    def stall(messages: Any, options: Any) -> str:
        question, _ = knowledge_of(messages)
        if question == SPOT:
            stalled.set()
            token = current_cancellation()
            assert token is not None, "the job's cancellation is not current"
            while not token.wait(0.05):
                pass
            errors.append(token.reason)
            raise LLMCancelledError(f"stopped: {token.reason}")
        return voter.reply(messages, options)

    voting.state.llms = OneTier(ScriptedLLM([stall]))  # type: ignore[assignment]
    job_id = _submit(voting, {"mode": "unlabeled"})
    assert stalled.wait(60), "the vote never asked the second question"
    running = voting.request("GET", f"/v1/jobs/{job_id}", "ops").json()
    assert running["state"] == "running" and running["message"].startswith(("voted on", "mining"))
    voting.request("DELETE", f"/v1/jobs/{job_id}", "ops")
    job = voting.wait_job(job_id)
    assert job["state"] == "cancelled", job
    assert errors == [f"job {job_id} was cancelled"]
    assert _mined(voting.state.store) == []
    votes = {e.question: e.metadata.get("vote") for e in _experiences(voting)}
    assert votes[HOUSTON] is not None and votes[SPOT] is None  # the first vote is kept


@pytest.mark.slow
def test_the_real_small_model_votes_through_the_servers_tier(tmp_path):
    """End to end: the vote asks through the server's own tier, the real 0.5B test model
    (three samples to keep it short); each question gets a remembered vote and is either
    mined with trust ``unlabeled`` or refused with a reason."""
    if not GEOQUERY.is_file():
        pytest.skip(f"benchmark database {GEOQUERY} not found (set ALMANAC_BENCH_DATA)")
    state = _real_model_state(
        tmp_path,
        jobs={"mine_vote_samples": 3, "mine_vote_min_ran": 2, "mine_vote_min_share": 0.6},
    )
    with running_server(state) as server:
        assert server.wait_job(_submit(server, {}, kind="profile"))["state"] == "succeeded"
        state.store.upsert_many([asked(HOUSTON), asked("what is the capital of texas")])
        job = server.wait_job(_submit(server, {"mode": "unlabeled"}), timeout=900)
        assert job["state"] == "succeeded", job
        vote = job["result"]["vote"]
        assert vote["asked"] == 2 and vote["kept"] + vote["refused"] == 2
        for experience in _experiences(server):
            remembered = experience.metadata["vote"]
            assert remembered["samples"] == 3 and remembered["ran"] >= 0
        mined = _mined(state.store)
        assert {e.metadata["mining"]["trust"] for e in mined} <= {"unlabeled"}
        assert len(mined) == job["result"]["merge"].get("inserted", 0)  # a kept question
        # may teach nothing new (its words already known): then no entry, no insertion
        result = job["result"]
        assert result["mined_experiences"] <= vote["kept"]
        assert result["mined_experiences"] + len(result["skipped"]) == 2
        assert len(_experiences(server)) == 2
