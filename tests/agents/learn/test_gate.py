"""The regression gate on GeoQuery: candidates mined from labeled questions are replayed on
held questions with a scripted model whose SQL depends on the knowledge in its prompt (the
orchestration), and once with the embedded 0.5B model (the plumbing)."""

from __future__ import annotations

import pytest

from agents.learn.gate import GateOptions, HeldQuestion, RegressionGate
from agents.learn.mine import candidates, is_candidate, mine_labeled
from agents.llm.base import Cancellation
from agents.pipeline import ModelTier, Pipeline, PipelineOptions
from bench.metrics.exact import execution_accuracy
from tests.agents.learn.conftest import labeled
from tests.agents.scripted import ScriptedLLM, sql_reply
from ukf import MINING_KEY, BaseUKF

NC_CAPITAL = "what is the capital of NC"
# it names seattle too: retrieval shows mined knowledge the question points to (a mined entry
# reached by the database facet alone stays out of prompts: RetrievalOptions.mined_by_facet)
MIAMI = "how many people live in miami, not seattle"
TEXAS_CAPITAL = "what is the capital of texas"
NC_MEANS = "\"NC\" means state.state_name = 'north carolina'"
SEATTLE = 'Predicate "seattle"'
CITIES = ["houston", "dallas", "seattle", "chicago", "detroit", "tampa", "tucson", "memphis"]
GOLD = {
    NC_CAPITAL: "SELECT capital FROM state WHERE state_name = 'north carolina'",
    MIAMI: "SELECT population FROM city WHERE city_name = 'miami'",
    TEXAS_CAPITAL: "SELECT capital FROM state WHERE state_name = 'texas'",
}


def knowledge_of(messages) -> tuple[str, str]:
    """(question, knowledge section) of the prompt's last message."""
    text = messages[-1]["content"]
    question = text.rsplit("### Question", 1)[-1].strip()
    knowledge = text.split("### Knowledge", 1)[-1] if "### Knowledge" in text else ""
    return question, knowledge


def model_reading_knowledge(messages, _options) -> str:
    """Right on the NC question only when told what NC means; wrong on the Miami question
    when the (misleading) Seattle predicate is in its prompt; right on everything else."""
    question, knowledge = knowledge_of(messages)
    if question == NC_CAPITAL and NC_MEANS not in knowledge:
        return sql_reply("SELECT capital FROM state WHERE state_name = 'nc'")
    if question == MIAMI and SEATTLE in knowledge:
        return sql_reply("SELECT population FROM city WHERE city_name = 'seattle'")
    return sql_reply(GOLD.get(question, "SELECT 1"))


def mined_sources(store, db, cities=CITIES) -> list:
    sources = [
        labeled(
            "how many people live in NC",
            "SELECT s.population FROM state AS s WHERE s.state_name = 'north carolina'",
            verified=True,
        ),
        *(
            labeled(
                f"how many people live in {city}",
                f"SELECT population FROM city WHERE city_name = '{city}'",
                verified=True,
            )
            for city in cities
        ),
    ]
    store.upsert_many(sources)
    mine_labeled(store, sources, job_id="job-1", targets={"geoquery": db})
    return sources


def held_questions(store) -> list[HeldQuestion]:
    held = [labeled(q, sql, verified=True) for q, sql in GOLD.items()]
    store.upsert_many(held)
    return [HeldQuestion.of(e) for e in held]


def gate_for(db, llm, held, **options) -> RegressionGate:
    def factory(store, retriever):
        return Pipeline(
            store=store,
            retriever=retriever,
            database=db,
            database_name="geoquery",
            tiers=[ModelTier("scripted", llm)],
            options=PipelineOptions(),
        )

    return RegressionGate(
        factory,
        held,
        db,
        same_result=execution_accuracy,
        llm_calls=lambda: len(llm.calls),
        **options,
    )


def named(store, name: str) -> BaseUKF:
    (entry,) = [e for e in store.iterate(source="auto", active=None) if e.name == name]
    return entry


def status(store, name: str) -> str:
    return named(store, name).metadata[MINING_KEY]["status"]


def test_a_helpful_candidate_is_activated_and_a_breaking_one_rejected(geo):
    store, db = geo
    mined_sources(store, db, cities=["seattle"])
    held = held_questions(store)
    pending = candidates(store, job_id="job-1")
    assert {e.name for e in pending} >= {"NC", "seattle"}

    llm = ScriptedLLM([model_reading_knowledge])
    report = gate_for(db, llm, held, options=GateOptions(per_entry_up_to=8)).run(store, pending)

    assert report.held == 3 and report.baseline_ex == pytest.approx(2 / 3)
    assert status(store, "NC") == "active" and not named(store, "NC").inactive_mark
    assert status(store, "seattle") == "rejected" and named(store, "seattle").inactive_mark
    nc_gate = named(store, "NC").metadata[MINING_KEY]["gate"]
    assert nc_gate["decision"] == "activated" and len(nc_gate["fixed"]) == 1
    assert nc_gate["ex_with"] > nc_gate["ex_without"]
    seattle_gate = named(store, "seattle").metadata[MINING_KEY]["gate"]
    miami = next(h.id for h in held if h.question == MIAMI)
    assert seattle_gate["decision"] == "rejected" and seattle_gate["broken"] == [miami]
    assert report.final_ex == pytest.approx(1.0)
    assert report.llm_calls and report.llm_calls > 0


def test_bisection_isolates_one_bad_entry_with_fewer_evaluations(geo, tmp_path):
    store, db = geo
    mined_sources(store, db)
    held = held_questions(store)
    pending = candidates(store, job_id="job-1")
    assert len(pending) >= 8

    llm = ScriptedLLM([model_reading_knowledge])
    options = GateOptions(batch_size=len(pending))
    report = gate_for(db, llm, held, options=options).run(store, pending)

    assert report.rejected == [named(store, "seattle").id]
    assert set(report.activated) == {e.id for e in pending} - {named(store, "seattle").id}
    # one evaluation for the baseline and one after the batch, besides the bisection's
    decisions = report.evaluations - 2
    assert decisions < len(pending)  # one by one: one evaluation per entry
    # only questions whose prompt changed were asked again
    assert report.asked < report.evaluations * report.held


def test_the_live_store_is_untouched_while_measuring_and_sources_are_not_held(geo):
    store, db = geo
    sources = mined_sources(store, db, cities=["seattle"])
    held = [*held_questions(store), HeldQuestion.of(sources[0])]  # NC's source
    experiences = store.count(type="experience", active=None)
    version = store.version
    pending = candidates(store, job_id="job-1")
    seen: list[tuple[int, int]] = []

    def watching(messages, options):
        seen.append((store.version, store.count(source="auto", active=True)))
        return model_reading_knowledge(messages, options)

    llm = ScriptedLLM([watching])
    report = gate_for(db, llm, held, options=GateOptions(batch_size=len(pending))).run(
        store, pending
    )

    assert report.excluded == [sources[0].id] and report.held == 3
    assert seen and seen[0] == (version, 0)
    before_writes = [s for s in seen if s[0] == version]
    assert before_writes and all(active == 0 for _, active in before_writes)
    assert store.count(type="experience", active=None) == experiences  # nothing logged live


def test_cancellation_stops_the_gate_and_leaves_candidates_waiting(geo):
    store, db = geo
    mined_sources(store, db, cities=["seattle"])
    held = held_questions(store)
    pending = candidates(store, job_id="job-1")
    token = Cancellation()

    def cancelling(messages, options):
        token.cancel("stop the gate")
        return model_reading_knowledge(messages, options)

    llm = ScriptedLLM([cancelling])
    report = gate_for(db, llm, held, cancellation=token).run(store, pending)

    assert report.cancelled and report.decisions == []
    # the first question's ask ends (with its repair: a scripted model does not look at the
    # token); no other question is asked
    asked = " ".join(m["content"] for messages, _ in llm.calls for m in messages)
    assert sum(q in asked for q in GOLD) == 1
    assert all(is_candidate(e) for e in candidates(store, job_id="job-1"))
    assert len(candidates(store, job_id="job-1")) == len(pending)


@pytest.mark.slow
def test_the_gate_runs_with_the_embedded_model(geo):
    from agents.llm.llamacpp import LlamaCppLLM
    from agents.llm.models import TEST_MODEL, default_data_dir, pull

    store, db = geo
    mined_sources(store, db, cities=["seattle"])
    held = held_questions(store)
    pending = candidates(store, job_id="job-1")
    path = pull(TEST_MODEL, default_data_dir(), progress=False)
    llm = LlamaCppLLM(str(path), n_ctx=8192)

    def factory(scratch, retriever):
        return Pipeline(
            store=scratch,
            retriever=retriever,
            database=db,
            database_name="geoquery",
            tiers=[ModelTier("small", llm)],
            options=PipelineOptions(),
        )

    gate = RegressionGate(factory, held, db, options=GateOptions(batch_size=len(pending)))
    report = gate.run(store, pending)

    assert not report.cancelled and report.held == 3 and report.asked >= 3
    decided = set(report.activated) | set(report.rejected)
    assert decided == {e.id for e in pending}
    for entry in store.get_many(decided).values():
        note = entry.metadata[MINING_KEY]
        assert note["status"] in ("active", "rejected") and "ex_with" in note["gate"]
