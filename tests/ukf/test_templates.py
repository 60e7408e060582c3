from datetime import UTC, datetime

import pytest

from tests.support.samples import every_template
from ukf import (
    ColumnUKF,
    EnumUKF,
    ExperienceUKF,
    KnowledgeUKF,
    QueryContext,
    RuleUKF,
    TableUKF,
    UnknownComposerError,
    UnknownTriggerError,
    composer,
    type_names,
)


def test_every_template_type_is_registered():
    assert {e.type for e in every_template()} == set(type_names())
    assert len(type_names()) == 11


def test_every_template_renders_with_its_default_composer():
    for entry in every_template():
        text = entry.text()
        assert text.strip(), entry.type
        assert entry.name.split()[0] in text or entry.type == "experience"


def test_schema_constructors_fill_tags_and_relations():
    table = TableUKF.create(
        "shop",
        "orders",
        foreign_keys=[
            {"columns": ["customer_id"], "ref_table": "customers", "ref_columns": ["id"]}
        ],
    )
    column = ColumnUKF.create(table, "status", data_type="TEXT")
    value = EnumUKF.create(column, "open", count=3)
    assert table.tags == ("[DATABASE:shop]", "[TABLE:orders]")
    assert "[COLUMN:status]" in column.tags and "[ENUM:open]" in value.tags
    assert [(r.relation, r.object) for r in column.related] == [("column_of", table.id)]
    assert [(r.relation, r.object) for r in value.related] == [("value_of", column.id)]
    customers = TableUKF.create("shop", "customers")
    assert table.related[0].relation == "joins" and table.related[0].object == customers.id
    assert value.workspace == table.workspace and value.collection == "schema"


def test_experience_keeps_question_context_sql_and_labels():
    when = datetime(2025, 3, 4, tzinfo=UTC)
    exp = ExperienceUKF.create(
        "Nova revenue last month?",
        "SELECT 1",
        database="autofin",
        context={"query_time": when, "user_profile": {"region": "EU"}},
        cot="...",
        labeled=True,
    )
    assert exp.question == "Nova revenue last month?" and exp.sql == "SELECT 1"
    assert exp.context.query_time == when and exp.context.user_profile == {"region": "EU"}
    assert exp.labeled and exp.is_authoritative
    other_context = ExperienceUKF.create("Nova revenue last month?", database="autofin")
    assert other_context.id != exp.id


def test_content_composers_map_roles_to_registered_names():
    @composer("test_shout")
    def shout(ukf, **context):
        return f"{ukf.name.upper()}{context.get('suffix', '')}"

    entry = KnowledgeUKF.create("bcr", "x", content_composers={"prompt": "test_shout"})
    assert entry.text("prompt", suffix="!") == "BCR!"
    assert entry.text("brief") == "knowledge bcr"
    with pytest.raises(UnknownComposerError, match="nope"):
        entry.text("nope")


def test_triggers_are_evaluated_by_name_against_the_context():
    rule = RuleUKF.create(
        "refresh",
        "before the 10th, this month means last month",
        kind="temporal",
        triggers={
            "query_time_window": {"day_of_month_to": 9},
            "user_profile_match": {"region": ["EU", "APAC"]},
        },
    )
    eu = {"region": "eu"}
    assert rule.triggered(QueryContext(query_time="2025-03-04T10:00:00", user_profile=eu))
    assert not rule.triggered(QueryContext(query_time="2025-03-14T10:00:00", user_profile=eu))
    assert not rule.triggered(QueryContext(query_time="2025-03-04T10:00:00"))
    assert not rule.triggered(QueryContext())
    assert KnowledgeUKF.create("x", "y").triggered(QueryContext())


def test_unknown_trigger_names_fail_clearly_and_nothing_is_executed():
    rule = KnowledgeUKF(name="x", triggers={"__import__('os').system('true')": {}})
    with pytest.raises(UnknownTriggerError, match="unknown trigger"):
        rule.triggered(QueryContext())
