"""An analysis with the real embedded model (0.5B) through a real Pipeline on concert_singer:
typing, planning, the sub-questions through the chain, and the narrative. The structure is
asserted (typed, evidence present, every finding passing the number check), not the content
a 0.5B model writes."""

from __future__ import annotations

import pytest

from agents.analysis.numbers import known_numbers, unsupported_number
from agents.analysis.run import AnalysisOptions, Analyst
from agents.analysis.typing import TYPES, classify_question, rule_typing
from agents.pipeline import AskOptions, ModelTier, Pipeline

pytestmark = pytest.mark.slow  # the real model types, plans, writes SQL and the narrative


def test_the_embedded_model_analyses_a_question_on_concert_singer(concert, embedded_llm):
    store, database, retriever = concert
    pipeline = Pipeline(
        store=store,
        retriever=retriever,
        database=database,
        database_name="concert_singer",
        tiers=[ModelTier("0.5b", embedded_llm)],
    )
    events: list[dict] = []
    analyst = Analyst(
        lambda q: pipeline.ask(q, options=AskOptions(abstain=False, deadline_s=120)),
        embedded_llm,
        AnalysisOptions(max_steps=2, max_seconds=240),
    )
    analysis = analyst.analyze(
        "Compare the number of singers by country.",
        schema_text=pipeline.catalog.render(),
        on_event=events.append,
    )
    assert analysis.type in TYPES and analysis.type != "lookup" and analysis.plan is not None
    assert 1 <= len(analysis.evidence) <= 2 and analysis.sql_calls == len(analysis.evidence)
    assert any(e.ok and e.rows for e in analysis.evidence), analysis.evidence
    assert analysis.short_answer and analysis.findings
    rows = {e.id: e for e in analysis.evidence}
    facts = known_numbers([v for f in analysis.facts for v in _leaves(f)] + [analysis.question])
    for finding in analysis.findings:
        assert finding.evidence and all(i in rows for i in finding.evidence)
        cited = known_numbers(c for i in finding.evidence for r in rows[i].rows for c in r)
        assert unsupported_number(finding.text, cited + facts) is None, finding.text
    assert [e["stage"] for e in events][:2] == ["typing", "plan"] and events[-1]["stage"] == "final"


def _leaves(value):
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def test_the_embedded_model_types_a_question_the_rules_are_unsure_of(embedded_llm):
    question = "Singers and their countries, the whole picture"
    assert rule_typing(question)[1] is False  # no cue: the model is asked
    typed = classify_question(question, embedded_llm)
    assert typed.type in TYPES
    # the model's typing, or the rules' with a note saying why the model's was unusable
    assert typed.by == "llm" or typed.notes, typed
