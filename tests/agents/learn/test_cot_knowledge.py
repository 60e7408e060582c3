"""The knowledge behind a SQL's implicit filters: which entries the CoT writer is shown, the
checker accepting their names, and the CoT record keeping their ids."""

from __future__ import annotations

from typing import Any

from agents.learn.cot import CotWriter, check_cot, cot_record, profile_cot
from agents.learn.cot.knowledge import CotKnowledgeLookup
from agents.learn.cot.sql_parts import read_sql
from tests.agents.scripted import ScriptedLLM, asked_question
from ukf import ExperienceUKF, KnowledgeUKF, MetricUKF, PredicateUKF, RuleUKF, SynonymUKF

DB = "autofin"
SQL = (
    "SELECT SUM(ptd_amt_usd) FROM income_nova WHERE period = '202504' AND caliber = 'A'"
    " AND report_item_level1 = 'Revenue'"
)
QUESTION = "Nova revenue last month?"


def _knowledge() -> dict[str, Any]:
    return {
        "caliber_rule": RuleUKF.create(
            "Management view by default",
            "Filter caliber = 'A' unless the question names another caliber.",
            kind="intent",
            database=DB,
        ),
        "caliber_b": RuleUKF.create(
            "Default caliber B", "Filter caliber = 'B' for statutory users.", database=DB
        ),
        "revenue": MetricUKF.create(
            "Revenue",
            "SUM(<amount>) WHERE report_item_level1 = 'Revenue'",
            kind="indicator",
            database=DB,
            description="Vehicle sales plus parts and service revenue.",
        ),
        # says "A" only as an English word: no statement of caliber = 'A'
        "loose": KnowledgeUKF.create(
            "Caliber note", "A caliber is an accounting view of the figures.", database=DB
        ),
        # names the period column in general, not the value of this SQL
        "period": KnowledgeUKF.create(
            "Period", "The period column holds the reporting month as YYYYMM.", database=DB
        ),
        "retail": PredicateUKF.create(
            "Retail channel", "channel IN ('Retail Store', 'Kiosk')", database=DB
        ),
        "sprite": SynonymUKF.create(
            "Sprite", "model-target", target_name="model_code = 'NV100'", database=DB
        ),
        "other_db": RuleUKF.create(
            "Another database's caliber", "Filter caliber = 'A'.", database="elsewhere"
        ),
    }


def _lookup(store: Any, question: str, sql: str) -> list[str]:
    found = CotKnowledgeLookup(store).for_sql(question, read_sql(sql), DB)
    return [k.name for k in found]


def test_the_lookup_finds_the_entries_that_state_filters_the_question_does_not_name(store):
    store.upsert_many(list(_knowledge().values()))
    assert _lookup(store, QUESTION, SQL) == ["Management view by default", "Revenue"]
    # the question names the caliber: that filter needs no knowledge
    assert _lookup(store, "Nova revenue last month, caliber A?", SQL) == ["Revenue"]
    # a synonym only where the question uses its phrase
    sprite = "SELECT count(*) FROM sales_ledger_nova WHERE model_code = 'NV100'"
    assert _lookup(store, "How many Sprite invoices?", sprite) == ["Sprite"]
    assert _lookup(store, "How many NV100 invoices?", sprite) == []
    retail = "SELECT count(*) FROM sales_ledger_nova WHERE channel IN ('Retail Store', 'Kiosk')"
    assert _lookup(store, "How many retail invoices?", retail) == ["Retail channel"]
    assert _lookup(store, "How many invoices?", "SELECT count(*) FROM sales_ledger_nova") == []
    assert CotKnowledgeLookup(store).for_sql(QUESTION, read_sql(SQL), None) == []


def test_the_checker_accepts_a_quoted_knowledge_name_only_when_it_was_shown():
    explanation = (
        '1. "Nova" is the `income_nova` table.\n'
        '2. "revenue" is the metric "Revenue": `report_item_level1` = \'Revenue\','
        " summed over `ptd_amt_usd`: SUM(ptd_amt_usd).\n"
        "3. \"last month\" is `period` = '202504'.\n"
        "4. No caliber is named, so the rule \"Management view by default\" gives `caliber` = 'A'."
    )
    shown = check_cot(QUESTION, SQL, explanation, phrases=["Management view by default", "Revenue"])
    assert shown.passed, shown.reasons
    unshown = check_cot(QUESTION, SQL, explanation)
    assert not unshown.passed and "name Management" in unshown.absent


def test_the_writer_is_shown_the_knowledge_and_the_record_keeps_its_ids(store):
    knowledge = _knowledge()
    store.upsert_many(list(knowledge.values()))
    experience = ExperienceUKF.create(QUESTION, SQL, database=DB, dialect="sqlite", labeled=True)
    store.upsert(experience)
    good = (
        '1. "Nova" is the `income_nova` table.\n'
        '2. "revenue" is the metric "Revenue": `report_item_level1` = \'Revenue\', summed:'
        " SUM(ptd_amt_usd).\n"
        "3. \"last month\" is `period` = '202504'.\n"
        "4. The rule \"Management view by default\" gives `caliber` = 'A'."
    )

    def reply(messages: list[dict[str, str]], _options: dict[str, Any]) -> str:
        assert asked_question(messages) == QUESTION
        return good

    llm = ScriptedLLM([reply], name="teacher")
    report = profile_cot(store, [experience], CotWriter(llm), with_knowledge=True, job_id="k1")
    assert (report.asked, report.passed) == (1, 1), report.to_dict()
    prompt = llm.calls[0][0][1]["content"]
    assert "Knowledge the SQL follows" in prompt
    assert "rule \"Management view by default\": Filter caliber = 'A'" in prompt
    assert 'metric "Revenue": SUM(<amount>) WHERE report_item_level1' in prompt
    assert "Caliber note" not in prompt and "Default caliber B" not in prompt
    record = cot_record(store.get(experience.id))
    assert record is not None and record["passed"]
    assert record["knowledge"] == [knowledge["caliber_rule"].id, knowledge["revenue"].id]

    # without the knowledge the same reply names a rule the writer was never shown
    bare = ScriptedLLM([reply], name="bare teacher")
    plain = profile_cot(store, [experience], CotWriter(bare), apply=False)  # the default
    assert "Knowledge the SQL follows" not in bare.calls[0][0][1]["content"]
    assert plain.passed == 0 and plain.failed == 1
