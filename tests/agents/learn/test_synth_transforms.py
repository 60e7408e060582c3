"""Each synthesis transform on real Spider databases (concert_singer, dog_kennels): the
variants it makes, that they run read-only on the database, and what they return."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.learn.mine.schema_view import SchemaView
from agents.learn.synth import SynthOptions, variants_of
from agents.learn.synth.compose import compose
from agents.learn.synth.decompose import decompose
from agents.learn.synth.results import degenerate, run, same_result
from agents.learn.synth.variants import SynthSchema, sql_key
from agents.learn.synth.vary import vary
from kb.target.database import Database
from tests.agents.learn.conftest import SPIDER, profiled


@pytest.fixture
def concert_schema(tmp_path: Path) -> Iterator[tuple[SynthSchema, Database]]:
    store, database = profiled(
        tmp_path, SPIDER / "concert_singer" / "concert_singer.sqlite", "concert_singer"
    )
    yield SynthSchema(SchemaView(store, "concert_singer", target=database), "sqlite"), database
    database.close()
    store.close()


def rows(database: Database, sql: str) -> set[tuple[object, ...]]:
    results = run(database, sql)
    assert results.ok, results.error
    return set(results.rows)


def test_filter_adds_an_enum_value_and_a_median_comparison(concert_schema):
    schema, database = concert_schema
    variants = compose("SELECT name FROM singer WHERE country = 'France'", schema, "filter")
    by_sql = {v.sql: v for v in variants}
    enum = "SELECT name FROM singer WHERE country = 'France' AND singer.Is_male = 'F'"
    assert enum in by_sql
    assert by_sql[enum].detail == {"table": "singer", "column": "Is_male", "op": "=", "value": "F"}
    median = "SELECT name FROM singer WHERE country = 'France' AND singer.Age > 36"
    assert median in by_sql and "singer.Age > 36" in by_sql[median].change
    assert not any("singer.Country =" in v.sql for v in variants)  # already filtered on
    assert rows(database, enum) < rows(database, "SELECT name FROM singer WHERE country='France'")


def test_group_answers_an_aggregate_per_value_of_an_enum_like_column(concert_schema):
    schema, database = concert_schema
    variants = compose("SELECT count(*) FROM singer", schema, "group")
    sqls = [v.sql for v in variants]
    grouped = "SELECT singer.Country, COUNT(*) FROM singer GROUP BY singer.Country"
    assert grouped in sqls
    assert rows(database, grouped) == {("France", 4), ("Netherlands", 1), ("United States", 1)}
    assert compose("SELECT name FROM singer", schema, "group") == []  # not an aggregate
    assert compose("SELECT count(*) FROM singer GROUP BY country", schema, "group") == []


def test_join_follows_foreign_keys_through_a_bridge_table(concert_schema):
    schema, database = concert_schema
    [variant] = compose("SELECT count(*) FROM singer", schema, "join")
    assert "JOIN singer_in_concert" in variant.sql and "JOIN concert" in variant.sql
    assert "singer.Singer_ID = singer_in_concert.Singer_ID" in variant.sql
    assert [step["ref_table"] for step in variant.detail["path"]] == [
        "singer_in_concert",
        "concert",
    ]
    results = run(database, variant.sql)
    assert results.ok and degenerate(results) is None, results.error


def test_join_qualifies_the_source_columns_it_could_make_ambiguous(concert_schema):
    schema, database = concert_schema
    [variant] = compose("SELECT singer_id, name FROM singer", schema, "join")
    assert "SELECT singer.singer_id, singer.name" in variant.sql
    assert run(database, variant.sql).ok


def test_window_keeps_the_newest_year_of_a_date_column_in_its_stored_format(tmp_path):
    path = SPIDER / "dog_kennels" / "dog_kennels.sqlite"
    store, database = profiled(tmp_path, path, "dog_kennels")
    schema = SynthSchema(SchemaView(store, "dog_kennels", target=database), "sqlite")
    variants = compose("SELECT count(*) FROM Dogs", schema, "window")
    arrived = next(v for v in variants if v.detail["column"] == "date_arrived")
    assert (
        "Dogs.date_arrived >= '2018-01-01 00:00:00' AND Dogs.date_arrived < '2019-01-01 00:00:00'"
        in arrived.sql
    )
    assert "the year 2018" in arrived.change
    adopted = next(v for v in variants if v.detail["column"] == "date_adopted")
    assert adopted.detail["from"] == "2018-03-01 00:00:00"  # one year of data: its last month
    in_2018 = "SELECT count(*) FROM Dogs WHERE date_arrived LIKE '2018%'"
    assert rows(database, arrived.sql) == rows(database, in_2018)
    # a query with a time condition on the table already gets no second window
    dated = "SELECT count(*) FROM Dogs WHERE date_of_birth > '2012-01-01'"
    assert compose(dated, schema, "window") == []
    database.close()
    store.close()


def test_decompose_gives_each_side_of_a_set_operation_and_each_subquery(concert_schema):
    schema, database = concert_schema
    intersect = (
        "SELECT T2.name FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id "
        "WHERE T1.year = 2014 INTERSECT SELECT T2.name FROM concert AS T1 JOIN stadium AS T2 "
        "ON T1.stadium_id = T2.stadium_id WHERE T1.year = 2015"
    )
    first, second = decompose(intersect, schema)
    assert first.sql.endswith("T1.year = 2014") and second.sql.endswith("T1.year = 2015")
    assert "first query of the INTERSECT" in first.change
    both = rows(database, intersect)
    assert both <= rows(database, first.sql) and both <= rows(database, second.sql)
    nested = "SELECT name FROM stadium WHERE stadium_id NOT IN (SELECT stadium_id FROM concert)"
    [part] = decompose(nested, schema)
    assert part.sql == "SELECT stadium_id FROM concert" and "subquery" in part.change
    assert decompose("SELECT name FROM singer", schema) == []


def test_vary_swaps_a_literal_for_other_profiled_values_of_its_column(concert_schema):
    schema, database = concert_schema
    source = 'SELECT avg(age) FROM singer AS s WHERE s.country = "France"'
    variants = vary(source, schema)
    assert [v.detail["to"] for v in variants] == ["Netherlands", "United States"]
    assert all(v.detail["column"] == "country" and v.detail["table"] == "singer" for v in variants)
    assert variants[0].sql == "SELECT AVG(age) FROM singer AS s WHERE s.country = 'Netherlands'"
    assert not same_result(run(database, variants[0].sql), run(database, source))
    assert vary("SELECT name FROM singer WHERE age > 30", schema) == []  # not an enum column


def test_variants_interleave_the_transforms_and_stop_at_the_cap(concert_schema):
    schema, _ = concert_schema
    sql = "SELECT count(*) FROM singer WHERE country = 'France'"
    everything = variants_of(sql, schema, SynthOptions(per_source=50))
    assert {v.transform for v in everything} == {"filter", "group", "join", "vary"}
    capped = variants_of(sql, schema, SynthOptions(per_source=3))
    assert [v.transform for v in capped] == ["filter", "group", "join"]
    only = variants_of(sql, schema, SynthOptions(transforms=("vary",), per_source=50))
    assert {v.transform for v in only} == {"vary"}


def test_degenerate_results_are_named(concert_schema):
    _, database = concert_schema
    assert degenerate(run(database, "SELECT name FROM singer WHERE 0")) == "empty result"
    assert degenerate(run(database, "SELECT NULL, NULL FROM singer")) == "only NULL values"
    empty_count = run(database, "SELECT count(*) FROM singer WHERE country = 'Mars'")
    assert degenerate(empty_count) == "a single 0 or NULL aggregate"
    assert degenerate(run(database, "SELECT max(age) FROM singer WHERE 0")) is not None
    assert (degenerate(run(database, "SELECT nonsense FROM singer")) or "").startswith("failed")
    assert degenerate(run(database, "SELECT count(*) FROM singer")) is None


def test_the_sql_key_ignores_spacing_case_and_quoting():
    a = sql_key("select name from singer where country = 'France'", "sqlite")
    assert a == sql_key("SELECT  name\nFROM singer WHERE country='France'", "sqlite")
    assert a != sql_key("SELECT name FROM singer WHERE country = 'Netherlands'", "sqlite")
