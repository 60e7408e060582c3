"""The whole chain with scripted models: answers, failures, logging and feedback."""

from __future__ import annotations

import pytest

from agents.experience_log import FeedbackError
from agents.llm.base import LLMBusyError
from agents.pipeline import AskOptions, ModelTier, Pipeline, PipelineOptions
from agents.rag.schema_slice import NotProfiledError
from agents.sql.generate import GenerateOptions
from indices.embeddings import HashingEmbedder
from indices.index_set import IndexSet
from tests.agents.scripted import ScriptedLLM, sql_reply
from ukf import QueryContext

FRANCE = "SELECT name FROM singer WHERE country = 'France'"
QUESTION = "What are the names of the singers from France?"


def make(concert, llm, **options) -> Pipeline:
    store, database, _ = concert
    retriever = IndexSet.build(store, HashingEmbedder()).retriever()
    return Pipeline(
        store=store,
        retriever=retriever,
        database=database,
        database_name="concert_singer",
        tiers=[ModelTier("scripted", llm)],
        options=PipelineOptions(**options),
    )


def test_an_answer_carries_sql_rows_knowledge_stages_and_is_logged(concert):
    store, _, _ = concert
    llm = ScriptedLLM([sql_reply(FRANCE, "singers filtered by country")])
    answer = make(concert, llm).ask(QUESTION, QueryContext(query_time="2026-01-01T00:00:00Z"))
    assert answer.error is None and answer.executed and answer.vote_share == 1.0
    assert 0 < answer.confidence < 1 and answer.signals["unmatched_content_words"] == 0
    assert answer.row_count == 4 and answer.columns == ["Name"]
    assert "singers filtered by country" in answer.reasoning
    assert answer.sql == FRANCE  # the reply's "-- Reasoning:" header is not part of the SQL
    linked = {(k.type, k.name): k for k in answer.knowledge}
    assert ("enum", "France") in linked and linked[("enum", "France")].phrases == ["France"]
    assert [s.stage for s in answer.stages] == ["retrieve", "generate", "refine", "assess", "log"]
    assert answer.prompt_tokens > 0 and answer.completion_tokens > 0
    prompt = llm.calls[0][0][1]["content"]
    assert "CREATE TABLE singer" in prompt and "Query time: 2026-01-01" in prompt
    assert "\"France\" -> singer.Country = 'France'" in prompt
    logged = store.get(answer.experience_id)
    assert logged.type == "experience" and not logged.labeled
    assert answer.id in logged.content_resources["answers"]


def test_rows_are_truncated_to_max_rows(concert):
    llm = ScriptedLLM([sql_reply("SELECT name FROM singer")])
    answer = make(concert, llm).ask("All singer names", options=AskOptions(max_rows=2))
    assert answer.row_count == 6 and len(answer.rows) == 2 and answer.truncated


def test_garbage_from_the_model_gives_an_error_answer_not_an_exception(concert):
    llm = ScriptedLLM(["Sorry, as a language model I cannot help."])
    answer = make(concert, llm).ask(QUESTION)
    assert answer.sql is None and not answer.executed and answer.confidence == 0.0
    assert "no candidate SQL ran successfully" in answer.error
    assert answer.experience_id, "failed questions are logged too"


def test_an_answer_whose_sql_failed_still_carries_the_clean_statement(concert):
    llm = ScriptedLLM([sql_reply("SELECT nope FROM singer")])
    pipeline = make(concert, llm)
    pipeline.options.refine.rounds = 0
    answer = pipeline.ask(QUESTION)
    assert not answer.executed and "no candidate SQL ran successfully" in answer.error
    assert answer.sql == "SELECT nope FROM singer"


def test_a_model_timeout_gives_an_error_answer(concert):
    llm = ScriptedLLM([sql_reply(FRANCE)], delay_s=1.0)
    pipeline = make(concert, llm, generate=GenerateOptions(timeout_s=0.1))
    pipeline.options.refine.rounds = 0
    answer = pipeline.ask(QUESTION)
    assert answer.sql is None and "no answer within" in answer.error


def test_a_busy_model_is_reported_to_the_caller(concert):
    llm = ScriptedLLM([LLMBusyError("all slots busy")])
    with pytest.raises(LLMBusyError):
        make(concert, llm).ask(QUESTION)


@pytest.mark.parametrize("question", ["", "   ", "x" * 2001])
def test_bad_questions_are_refused(concert, question):
    with pytest.raises(ValueError, match="question"):
        make(concert, ScriptedLLM([sql_reply(FRANCE)])).ask(question)


def test_a_database_that_was_never_profiled_is_refused_with_what_to_do(concert):
    store, database, _ = concert
    llm = ScriptedLLM([sql_reply(FRANCE)])
    pipeline = Pipeline(
        store=store,
        retriever=IndexSet.build(store).retriever(),
        database=database,
        database_name="concert",  # profiled as concert_singer
        tiers=[ModelTier("scripted", llm)],
    )
    with pytest.raises(NotProfiledError, match="almanac init --db URL --name concert"):
        pipeline.ask(QUESTION)
    assert llm.calls == []


def test_unexecuted_answers_return_the_greedy_sql(concert):
    llm = ScriptedLLM([sql_reply(FRANCE)])
    answer = make(concert, llm).ask(QUESTION, options=AskOptions(execute=False, n=3))
    assert answer.sql == FRANCE and not answer.executed and answer.rows == []
    assert answer.reasoning == "Tables: any\nReasoning: scripted"
    assert len(llm.calls) == 1


def test_feedback_with_a_correction_becomes_an_example_for_the_next_similar_question(concert):
    store, _, _ = concert
    llm = ScriptedLLM([sql_reply("SELECT name FROM singer")])
    pipeline = make(concert, llm)
    answer = pipeline.ask(QUESTION)
    outcome = pipeline.feedback(answer.id, "wrong", corrected_sql=FRANCE, comment="filter!")
    assert outcome.labeled and outcome.row_count == 4
    labeled = store.get(outcome.experience_id)
    assert labeled.labeled and labeled.content_resources["verified"] and labeled.sql == FRANCE
    assert store.get(answer.experience_id).content_resources["answers"][answer.id]["verdict"] == (
        "wrong"
    )
    pipeline.ask("What are the names of singers from France ?")
    prompt = llm.calls[-1][0][1]["content"]
    assert "Similar questions answered before" in prompt and FRANCE in prompt


def test_feedback_correct_labels_the_answered_sql(concert):
    store, _, _ = concert
    pipeline = make(concert, ScriptedLLM([sql_reply(FRANCE)]))
    answer = pipeline.ask(QUESTION)
    outcome = pipeline.feedback(answer.id, "correct")
    assert store.get(outcome.experience_id).sql.endswith(FRANCE)


def test_bad_feedback_is_refused_and_stores_nothing(concert):
    store, database, _ = concert
    pipeline = make(concert, ScriptedLLM([sql_reply(FRANCE)]))
    answer = pipeline.ask(QUESTION)
    before = store.count()
    with pytest.raises(FeedbackError) as unknown:
        pipeline.feedback("0" * 32 + "-abc", "correct")
    assert unknown.value.status == 404
    for smuggled in ("DELETE FROM singer", "SELECT 1; DROP TABLE singer", "SELECT nope FROM t"):
        with pytest.raises(FeedbackError) as refused:
            pipeline.feedback(answer.id, "wrong", corrected_sql=smuggled)
        assert refused.value.status == 422
    with pytest.raises(FeedbackError):
        pipeline.feedback(answer.id, "maybe")
    assert store.count() == before
    assert database.execute("SELECT count(*) FROM singer").rows == [(6,)]


def test_a_refused_correction_says_refused_once(concert):
    pipeline = make(concert, ScriptedLLM([sql_reply(FRANCE)]))
    answer = pipeline.ask(QUESTION)
    with pytest.raises(FeedbackError) as refused:
        pipeline.feedback(answer.id, "wrong", corrected_sql="DELETE FROM singer")
    message = str(refused.value)
    assert message.startswith("corrected SQL was not stored: refused: DELETE statements")
    assert message.count("refused:") == 1 and "SQL: DELETE FROM singer" in message
    with pytest.raises(FeedbackError, match=r"not stored: sql: .*nope"):
        pipeline.feedback(answer.id, "wrong", corrected_sql="SELECT nope FROM singer")


def test_the_autonomous_mode_adds_what_the_model_found_with_tools(concert):
    import json

    def turn(tool, **arguments):
        return json.dumps({"thought": "look it up", "tool": tool, "arguments": arguments})

    llm = ScriptedLLM(
        [
            turn("fuzzy_enum", query="netherland"),
            turn("done"),
            sql_reply("SELECT name FROM singer WHERE country = 'Netherlands'"),
        ]
    )
    answer = make(concert, llm).ask("Singers from holland?", options=AskOptions(explore=True))
    assert answer.error is None and answer.row_count == 1
    found = {(k.type, k.name): k for k in answer.knowledge}
    assert ("enum", "Netherlands") in found and "explored" in found[("enum", "Netherlands")].reasons
    prompt = llm.calls[-1][0][1]["content"]
    assert "singer.Country = 'Netherlands'" in prompt
    assert answer.stage("retrieve").completion_tokens > 0


def _cascade(concert, small, large, **options) -> Pipeline:
    store, database, _ = concert
    return Pipeline(
        store=store,
        retriever=IndexSet.build(store).retriever(),
        database=database,
        database_name="concert_singer",
        tiers=[ModelTier("small", small), ModelTier("large", large)],
        options=PipelineOptions(**options),
    )


def test_a_cascade_escalates_failing_small_answers_instead_of_repairing_them(concert):
    small = ScriptedLLM([sql_reply("SELECT nam FROM singer WHERE country = 'France'")])
    large = ScriptedLLM([sql_reply(FRANCE)])
    answer = _cascade(concert, small, large).ask(QUESTION, options=AskOptions(cascade=True))
    assert answer.tier == "large" and answer.row_count == 4
    assert len(small.calls) == 1  # no repair rounds; its failure leaves nothing to agree with
    assert len(large.calls) == 1


def test_small_tier_repairs_can_be_turned_back_on(concert):
    small = ScriptedLLM(
        [sql_reply("SELECT nam FROM singer WHERE country = 'France'")] * 2 + [sql_reply(FRANCE)]
    )
    large = ScriptedLLM([sql_reply(FRANCE)])
    pipeline = _cascade(concert, small, large, cascade_small_repairs=True)
    pipeline.ask(QUESTION, options=AskOptions(cascade=True))
    repairs = [messages for messages, _ in small.calls if len(messages) > 2]
    assert repairs and "no such column: nam" in repairs[0][-1]["content"]  # asked to repair


def test_a_small_tier_fences_its_samples_and_a_vote_lets_samples_reason(concert):
    small = ScriptedLLM([sql_reply(FRANCE)])
    large = ScriptedLLM([sql_reply(FRANCE)])
    pipeline = _cascade(concert, small, large)
    pipeline.ask(QUESTION, options=AskOptions(cascade=True))
    assert [options.get("reply_prefix") for _, options in small.calls] == ["```sql\n"] * 2
    pipeline.ask(QUESTION, options=AskOptions(n=3))  # the last tier alone, voting
    assert [options.get("reply_prefix") for _, options in large.calls] == ["```sql\n", None, None]
