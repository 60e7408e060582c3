"""Whether the answered SQL reads what the question asks about: a projection that restates
its own filter, and an attribute read from rows that only reference the named entity, on a
small profiled database whose keys are declared nowhere (as GeoQuery's)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlglot import parse_one

from agents.confidence.sql_reading import SchemaKeys, sql_reading
from agents.confidence.vocabulary import DatabaseVocabulary
from kb.profile.profiler import ProfileOptions, profile_database
from kb.store import KnowledgeStore
from kb.target.database import Database


@pytest.fixture
def states(tmp_path: Path) -> Iterator[SchemaKeys]:
    path = tmp_path / "states.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE state (state_name TEXT, population INT, area REAL)")
        conn.execute("CREATE TABLE city (city_name TEXT, population INT, state_name TEXT)")
        conn.executemany(
            "INSERT INTO state VALUES (?, ?, ?)",
            [("alaska", 700000, 1.7), ("texas", 29000000, 0.7), ("utah", 3300000, 0.2)],
        )
        conn.executemany(
            "INSERT INTO city VALUES (?, ?, ?)",
            [
                ("anchorage", 290000, "alaska"),
                ("juneau", 32000, "alaska"),
                ("houston", 2300000, "texas"),
                ("austin", 960000, "texas"),
                ("provo", 115000, "utah"),
            ],
        )
    store = KnowledgeStore(f"sqlite:///{tmp_path / 'knowledge.db'}")
    database = Database(f"sqlite:///{path}")
    profile_database(
        database, store, database_name="states", options=ProfileOptions(progress=False)
    )
    yield DatabaseVocabulary(store, "states").snapshot().keys
    database.close()
    store.close()


def _features(sql: str, keys: SchemaKeys) -> dict[str, float]:
    return sql_reading(parse_one(sql, read="sqlite"), keys)


def test_the_profile_finds_the_unique_name_of_the_state_table(states):
    assert ("state", "state_name") in states.unique
    assert ("city", "state_name") not in states.unique
    assert states.columns["city"] == {"city_name", "population", "state_name"}


def test_a_state_s_population_read_from_its_cities_is_flagged(states):
    for sql in (
        "SELECT city.population FROM city WHERE city.state_name = 'alaska'",
        "SELECT SUM(population) FROM city WHERE state_name = 'utah'",
        "SELECT c.population FROM city AS c WHERE 'texas' = c.state_name",
    ):
        assert _features(sql, states)["attribute_via_reference"] == 1, sql


def test_the_state_s_own_row_or_a_named_city_is_not_flagged(states):
    for sql in (
        "SELECT population FROM state WHERE state_name = 'alaska'",
        "SELECT population FROM city WHERE state_name = 'texas' AND city_name = 'austin'",
        "SELECT population FROM city WHERE state_name = 'texas' ORDER BY population DESC LIMIT 1",
        "SELECT city_name FROM city WHERE state_name = 'texas'",
        "SELECT population FROM city WHERE city_name = 'houston'",
    ):
        assert _features(sql, states)["attribute_via_reference"] == 0, sql


def test_a_projection_that_restates_its_filter_is_flagged(states):
    echo = "SELECT state_name FROM state WHERE state_name = 'texas'"
    assert _features(echo, states)["projection_echoes_filter"] == 1
    aliased = "SELECT T1.state_name FROM state AS T1 WHERE T1.state_name = 'utah' AND area > 0"
    assert _features(aliased, states)["projection_echoes_filter"] == 1
    for sql in (
        "SELECT state_name, area FROM state WHERE state_name = 'texas'",
        "SELECT city_name FROM city WHERE state_name = 'texas'",
        "SELECT state_name FROM state WHERE state_name IN "
        "(SELECT state_name FROM city WHERE state_name = 'texas')",
        "SELECT count(*) FROM state WHERE state_name = 'texas'",
        "SELECT state_name FROM state UNION SELECT state_name FROM city",
    ):
        assert _features(sql, states)["projection_echoes_filter"] == 0, sql


def test_without_a_schema_only_the_echo_is_read():
    features = _features("SELECT a FROM t WHERE a = 'x'", SchemaKeys())
    assert features == {"projection_echoes_filter": 1.0}
