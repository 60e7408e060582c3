"""Answering from a mined query template on GeoQuery (real store, string index and target;
a scripted model that would answer wrongly): an active template the worked examples agree on
answers with no model call; an inactive one, the option off, values that do not fill the
slots, or a fill with no rows leave the question to the model."""

from __future__ import annotations

import pytest

from agents.learn.mine import activate, mine_labeled
from agents.pipeline import ModelTier, Pipeline, PipelineOptions
from agents.sql.template_fill import Template
from indices.embeddings import HashingEmbedder
from indices.index_set import IndexSet
from kb.target.results import Results
from tests.agents.learn.conftest import GEOQUERY, labeled, profiled
from tests.agents.scripted import ScriptedLLM, sql_reply
from ukf import QueryContext, RuleUKF

WRONG = "SELECT population FROM city WHERE city_name = 'honolulu'"
STATE_POPULATION = "SELECT population FROM state WHERE state_name = '{}'"
CITY_POPULATION = "SELECT population FROM city WHERE city_name = '{}'"
BIG_CITIES = "SELECT city_name FROM city WHERE state_name = '{}' AND population > 9000000"


@pytest.fixture
def geo(tmp_path):
    store, database = profiled(tmp_path, GEOQUERY, "geoquery")
    yield store, database
    database.close()
    store.close()


def learned(geo, shape: str, questions: dict[str, str], *, active: bool = True) -> str:
    """Store labeled experiences of one shape, mine them; the template's id (activated)."""
    store, database = geo
    experiences = [labeled(q, shape.format(v)) for q, v in questions.items()]
    store.upsert_many(experiences)
    report = mine_labeled(store, experiences, job_id="tpl", targets={"geoquery": database})
    (template_id,) = [
        uid
        for uid in report.candidate_ids
        if store.get(uid).content_resources.get("kind") == "template"
    ]
    if active:
        assert activate(store, [template_id]) == [template_id]
    return template_id


def pipeline_of(geo, llm: ScriptedLLM, **options) -> Pipeline:
    store, database = geo
    return Pipeline(
        store=store,
        retriever=IndexSet.build(store, HashingEmbedder()).retriever(),
        database=database,
        database_name="geoquery",
        tiers=[ModelTier("scripted", llm)],
        options=PipelineOptions(**options),
    )


def ask(geo, question: str, **options):
    llm = ScriptedLLM([sql_reply(WRONG)])
    return pipeline_of(geo, llm, **options).ask(question), llm


def agreed(geo, question: str) -> Template | None:
    """The active template the question's first three examples share."""
    pipeline = pipeline_of(geo, ScriptedLLM([sql_reply(WRONG)]))
    context = QueryContext().on("geoquery")
    return pipeline.templates.agreed(pipeline.rag.run(question, context).examples, context)


STATES = {f"what is the population of {s}": s for s in ("alaska", "texas", "ohio")}


def test_an_active_template_answers_with_no_model_call(geo):
    template_id = learned(geo, STATE_POPULATION, STATES)
    answer, llm = ask(geo, "what is the population of hawaii")
    assert llm.calls == []
    assert answer.tier == "template" and answer.executed and answer.rows == [[964000]]
    assert answer.sql == "SELECT population FROM state WHERE state_name = 'hawaii'"
    assert [c.template_id for c in answer.candidates] == [template_id]
    assert template_id in [k.id for k in answer.knowledge]
    assert answer.signals["template_filled"] == 1.0
    assert answer.prompt_tokens == 0 and answer.experience_id
    # the question is logged now and takes an example's place in the retrieval: the next
    # nearest labeled experience completes the examples
    again, llm = ask(geo, "what is the population of hawaii")
    assert llm.calls == [] and again.tier == "template" and again.rows == [[964000]]


def test_a_column_not_profiled_as_enums_is_filled_from_the_target(geo):
    cities = {f"how many people live in {c}": c for c in ("houston", "dallas", "boston")}
    learned(geo, CITY_POPULATION, cities)
    answer, llm = ask(geo, "how many people live in seattle")
    assert llm.calls == [] and answer.tier == "template" and answer.rows == [[493846]]


def test_an_inactive_template_or_the_option_off_leaves_the_question_to_the_model(geo):
    learned(geo, STATE_POPULATION, STATES, active=False)
    assert agreed(geo, "what is the population of hawaii") is None
    # (not logged: a logged question near the next ones would take an example's place)
    answer, llm = ask(geo, "what is the population of hawaii", log_questions=False)
    assert len(llm.calls) == 1 and answer.tier != "template" and answer.sql == WRONG

    store, _ = geo
    activate(store, [k.id for k in store.iterate(type="knowledge", active=False)])
    assert agreed(geo, "what is the population of hawaii") is not None
    answer, llm = ask(geo, "what is the population of hawaii", templates=False)
    assert len(llm.calls) == 1 and answer.sql == WRONG
    assert "template_filled" not in answer.signals


@pytest.mark.parametrize(
    "question",
    [
        "what is the population of the largest state",  # no value
        "what is the population of texas and ohio",  # two values, one slot
    ],
)
def test_values_that_do_not_fill_the_slots_leave_the_question_to_the_model(geo, question):
    template_id = learned(geo, STATE_POPULATION, STATES)
    assert agreed(geo, question).entry.id == template_id  # the examples agree: values decide
    answer, llm = ask(geo, question)
    assert len(llm.calls) == 1 and answer.sql == WRONG and answer.tier != "template"


def test_a_fill_with_no_rows_leaves_the_question_to_the_model(geo):
    big = {
        f"which cities of {s} have over 9 million people": s for s in ("alaska", "texas", "utah")
    }
    template_id = learned(geo, BIG_CITIES, big)
    question = "which cities of hawaii have over 9 million people"
    assert agreed(geo, question).entry.id == template_id
    assert pipeline_of(geo, ScriptedLLM([])).templates.values(question, agreed(geo, question).slots)
    answer, llm = ask(geo, "which cities of hawaii have over 9 million people")
    assert len(llm.calls) == 1 and answer.sql == WRONG


def test_a_value_of_another_templates_slot_column_counts_as_a_value(geo):
    """ "tempe arizona" says a city and a state: with a template slotting city names active,
    the one-slot state template does not take "arizona" alone."""
    template_id = learned(geo, STATE_POPULATION, STATES)
    question = "what is the population of tempe arizona"
    assert agreed(geo, question).entry.id == template_id
    assert pipeline_of(geo, ScriptedLLM([])).templates.values(question, agreed(geo, question).slots)
    cities = {f"how many people live in {c}": c for c in ("houston", "dallas", "boston")}
    learned(geo, CITY_POPULATION, cities)
    assert agreed(geo, question).entry.id == template_id
    answer, llm = ask(geo, question)
    assert len(llm.calls) == 1 and answer.sql == WRONG


def _us_office_rule(geo) -> None:
    """A rule switched on by the asker's profile: the US office sees US states only."""
    store, _ = geo
    store.upsert(
        RuleUKF.create(
            "States of the asker's country",
            "Users of the US office see the states of the USA.",
            kind="intent",
            database="geoquery",
            triggers={"user_profile_match": {"office": "US"}},
            content_resources={"default_filter": {"column": "country_name", "value": "usa"}},
        )
    )


def test_the_filled_template_gets_the_default_filters_it_lacks(geo):
    template_id = learned(geo, STATE_POPULATION, STATES)
    _us_office_rule(geo)
    llm = ScriptedLLM([sql_reply(WRONG)])
    us = QueryContext(user_profile={"office": "US"})
    answer = pipeline_of(geo, llm).ask("what is the population of hawaii", us)
    assert llm.calls == [] and answer.tier == "template" and answer.rows == [[964000]]
    assert answer.sql == (
        "SELECT population FROM state WHERE state_name = 'hawaii' AND state.country_name = 'usa'"
    )
    (candidate,) = answer.candidates
    assert candidate.template_id == template_id
    assert any("States of the asker's country" in note for note in candidate.notes)
    # another office: the template as filled
    other = pipeline_of(geo, llm).ask(
        "what is the population of hawaii", QueryContext(user_profile={"office": "DE"})
    )
    assert other.sql == "SELECT population FROM state WHERE state_name = 'hawaii'"


def test_a_filtered_template_the_database_rejects_runs_as_filled(geo, monkeypatch):
    learned(geo, STATE_POPULATION, STATES)
    _us_office_rule(geo)
    pipeline = pipeline_of(geo, ScriptedLLM([sql_reply(WRONG)]))
    execute = pipeline.templates.database.execute

    def rejecting(sql: str, *args, **kwargs):
        if "country_name" in sql:
            return Results.failure("sql", "no such column: country_name", sql=sql, elapsed=0.0)
        return execute(sql, *args, **kwargs)

    monkeypatch.setattr(pipeline.templates.database, "execute", rejecting)
    us = QueryContext(user_profile={"office": "US"})
    answer = pipeline.ask("what is the population of hawaii", us)
    assert answer.tier == "template" and answer.rows == [[964000]]
    assert answer.sql == "SELECT population FROM state WHERE state_name = 'hawaii'"
    (candidate,) = answer.candidates
    assert any("no such column: country_name" in note for note in candidate.notes)
