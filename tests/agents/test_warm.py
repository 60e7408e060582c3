"""Warming: the models see the prompt prefix every question on the database starts with."""

from __future__ import annotations

from agents.llm.base import LLMError
from agents.rag.agent import RagOptions
from agents.sql.tiers import ModelTier
from agents.warm import shared_schema, warm_pipeline
from tests.agents.scripted import ScriptedLLM, sql_reply
from tests.agents.test_pipeline import FRANCE, QUESTION, make


def test_warming_sends_the_prefix_a_real_question_starts_with(concert):
    llm = ScriptedLLM(["x", sql_reply(FRANCE)])
    pipeline = make(concert, llm)
    report = warm_pipeline(pipeline)
    assert report.models == ["scripted"] and report.error is None and report.prompt_tokens > 0
    ((warm_messages, warm_options),) = llm.calls
    assert warm_options["max_tokens"] == 1
    pipeline.ask(QUESTION)
    asked_messages = llm.calls[1][0]
    assert warm_messages[0] == asked_messages[0]  # the system prompt
    schema_part = warm_messages[1]["content"].split("\n\n### Question")[0]
    assert "CREATE TABLE singer" in schema_part
    assert asked_messages[1]["content"].startswith(schema_part)


def test_a_schema_sliced_per_question_is_not_warmed(concert):
    llm = ScriptedLLM(["x"])
    pipeline = make(concert, llm, rag=RagOptions(schema_tokens=60, stable_schema=False))
    assert shared_schema(pipeline) is None
    assert warm_pipeline(pipeline).models == [] and llm.calls == []


def test_a_model_that_fails_to_warm_is_reported_not_raised(concert):
    report = warm_pipeline(make(concert, ScriptedLLM([LLMError("model gone")])))
    assert report.models == [] and "model gone" in report.error


def test_warming_calls_the_tiers_it_is_given_instead_of_the_pipelines(concert):
    pipelines_own, given = ScriptedLLM(["x"]), ScriptedLLM(["x"], name="given")
    pipeline = make(concert, pipelines_own)
    report = warm_pipeline(pipeline, [ModelTier("default", given)])
    assert report.models == ["given"] and pipelines_own.calls == []
    ((messages, options),) = given.calls
    assert options["max_tokens"] == 1 and "CREATE TABLE singer" in messages[1]["content"]
