"""The SQL-gen prompt: examples say how their asking context differs from the question's."""

from __future__ import annotations

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
