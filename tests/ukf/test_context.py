"""QueryContext: built once where a question enters, read down to the triggers."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from ukf import ExperienceUKF, QueryContext, Reader, RuleUKF
from ukf.context import aware, parse_time

ANA = Reader(user="ana", groups=frozenset({"finance"}), workspace="emea")


def test_only_the_asked_in_part_is_data():
    context = QueryContext(
        query_time="2024-06-03T09:15:00",
        user_profile={"region": "EU"},
        reader=ANA,
        database="autofin",
        tags={"REGION": "EMEA"},
    )
    assert context.record() == {
        "query_time": "2024-06-03T09:15:00",
        "user_profile": {"region": "EU"},
    }
    assert context.user == "ana" and context.workspace == "emea" and context.reader == ANA
    assert QueryContext().record() == {"query_time": None, "user_profile": {}}
    assert QueryContext().user is None and QueryContext().workspace is None


def test_an_experience_stores_the_same_record_whoever_asked():
    alone = QueryContext(query_time="2024-06-03T09:15:00Z", user_profile={"region": "EU"})
    asked = alone.model_copy(update={"reader": ANA, "database": "autofin"})
    one = ExperienceUKF.create("Nova revenue?", "SELECT 1", database="autofin", context=alone)
    two = ExperienceUKF.create("Nova revenue?", "SELECT 1", database="autofin", context=asked)
    assert one.id == two.id and one.content_resources["context"] == alone.record()
    as_dict = ExperienceUKF.create(
        "Nova revenue?", "SELECT 1", database="autofin", context=alone.record()
    )
    assert as_dict.id == one.id
    assert ExperienceUKF.create("Nova revenue?", database="autofin").variant == "default"


def test_it_is_frozen_and_derived_copies_name_the_database():
    context = QueryContext(reader=ANA)
    with pytest.raises(ValidationError):
        context.database = "x"  # type: ignore[misc]
    on = context.on("shop")
    assert on.database == "shop" and context.database is None and on.reader == ANA
    assert on.on("shop") is on


def test_times_are_parsed_and_shown_as_json():
    naive = QueryContext(query_time="2024-06-03T09:15:00")
    assert naive.query_time_text() == "2024-06-03T09:15:00"
    assert naive.aware_query_time == datetime(2024, 6, 3, 9, 15, tzinfo=UTC)
    utc = QueryContext(query_time=datetime(2024, 6, 3, 9, 15, tzinfo=UTC))
    assert utc.query_time_text() == "2024-06-03T09:15:00Z"
    assert QueryContext().query_time_text() == "" and QueryContext().aware_query_time is None
    with pytest.raises(ValidationError, match="query_time"):
        QueryContext(query_time="yesterday-ish")
    with pytest.raises(ValidationError, match="extra"):
        QueryContext(user="ana")  # who asks is a Reader, not a loose key
    assert aware(None) is None and parse_time("2025-01-01").tzinfo == UTC
    with pytest.raises(ValueError):
        parse_time("soon")


def test_triggers_read_time_profile_and_workspace_from_the_context():
    rule = RuleUKF.create(
        "EMEA early",
        "Before the 10th in EMEA, report last month.",
        kind="temporal",
        triggers={
            "query_time_window": {"day_of_month_to": 9, "after": "2024-01-01"},
            "user_profile_match": {"region": ["EU", "UK"]},
            "workspace_in": {"workspaces": ["emea"]},
        },
    )
    asked = QueryContext(
        query_time="2024-06-03T09:15:00", user_profile={"region": "eu"}, reader=ANA
    )
    assert rule.triggered(asked)
    assert not rule.triggered(asked.model_copy(update={"reader": Reader(user="bo")}))
    assert not rule.triggered(asked.model_copy(update={"user_profile": {"region": "US"}}))
    assert not rule.triggered(asked.model_copy(update={"query_time": datetime(2024, 6, 12)}))
    assert not rule.triggered(asked.model_copy(update={"query_time": datetime(2023, 6, 3)}))
    assert not rule.triggered(QueryContext())
