"""The SQL-gen prompt: examples say how their asking context differs from the question's."""

from __future__ import annotations

import pytest

from agents.llm.base import Completion, LLMError
from agents.sql.generate import GenerateOptions, SqlGenerator, asked_differently
from tests.agents.scripted import ScriptedLLM, sql_reply
from ukf import QueryContext

MINE = QueryContext(
    query_time="2024-12-04T10:30:00Z",
    user_profile={"user": "s.tanaka", "department": "ZP", "currency": "JPY", "caliber": "A"},
)


def test_an_example_shows_its_date_and_the_profile_values_that_differ():
    theirs = {
        "query_time": "2024-06-04T08:00:00Z",
        "user_profile": {"user": "c.miller", "department": "BO", "currency": "USD", "caliber": "A"},
    }
    assert asked_differently(theirs, MINE) == "asked on 2024-06-04 by department=BO, currency=USD"


def test_the_same_context_or_none_says_nothing():
    same_day = {"query_time": "2024-12-04T18:00:00Z", "user_profile": {"user": "x", "caliber": "A"}}
    assert asked_differently(same_day, MINE) == ""
    assert asked_differently({}, MINE) == ""
    assert (
        asked_differently({"user_profile": {"department": "BO"}}, QueryContext())
        == "asked by department=BO"
    )


def test_replies_start_inside_a_sql_fence_and_stop_at_its_end():
    llm = ScriptedLLM([sql_reply("SELECT 1")])
    messages = [{"role": "user", "content": "one?"}]
    candidate = SqlGenerator(llm, "sqlite").sample(messages, 0)
    assert candidate.sql.endswith("SELECT 1")
    assert llm.calls[-1][1]["reply_prefix"] == "```sql\n" and llm.calls[-1][1]["stop"] == ["```"]
    SqlGenerator(llm, "sqlite").sample(messages, 1)  # a vote's sample may reason first
    assert "reply_prefix" not in llm.calls[-1][1] and "stop" not in llm.calls[-1][1]
    SqlGenerator(llm, "sqlite", GenerateOptions(fence_samples=True)).sample(messages, 1)
    assert llm.calls[-1][1]["reply_prefix"] == "```sql\n"
    SqlGenerator(llm, "sqlite", GenerateOptions(fence_greedy=False)).sample(messages, 0)
    assert "reply_prefix" not in llm.calls[-1][1]


class _ScoredLLM(ScriptedLLM):
    """Replies that carry token log probabilities (None for the reply without SQL)."""

    def chat(self, messages, **options):
        result = super().chat(messages, **options)
        text = result.completions[0].text
        scored = {"SELECT 1": (-0.5, -0.1, -2.0, -0.2), "SELECT 2": None}
        logprobs = next((v for k, v in scored.items() if k in text), (-0.3,))
        result.completions = [Completion(text, "stop", logprobs)]
        return result


def test_a_candidate_keeps_the_mean_and_least_log_probability_of_its_reply():
    messages = [{"role": "user", "content": "one?"}]
    replies = [sql_reply("SELECT 1"), "no sql here", sql_reply("SELECT 2"), LLMError("down")]
    llm = _ScoredLLM(replies)
    scored, no_sql, bare, failed = (SqlGenerator(llm, "sqlite").sample(messages, 0) for _ in "1234")
    assert scored.logprob_mean == pytest.approx(-0.7) and scored.logprob_min == -2.0
    assert not no_sql.ok and no_sql.results is not None  # a failed candidate keeps None
    assert (no_sql.logprob_mean, no_sql.logprob_min) == (None, None)
    assert (failed.logprob_mean, failed.logprob_min) == (None, None) and not failed.sql
    assert (bare.logprob_mean, bare.logprob_min) == (None, None)  # a reply without them
