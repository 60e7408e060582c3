"""Numeric comparisons mined from labeled GeoQuery questions: the phrase that names the
column (a unit after the number, or a comparative adjective) with the operator, never the
constant; the number read however it is written; found by the retriever once active."""

from __future__ import annotations

import pytest

from agents.learn.mine import activate, mine_labeled
from agents.learn.mine.labeled import kind_of
from agents.learn.mine.numbers import number_mentions, parse_number
from indices.index_set import IndexSet
from tests.agents.learn.conftest import labeled
from ukf import BaseUKF, QueryContext


def comparisons(store) -> list[BaseUKF]:
    return [e for e in store.iterate(source="auto", active=None) if kind_of(e) == "comparison"]


def test_a_unit_after_the_number_names_the_column(geo):
    store, db = geo
    exp = labeled(
        "which states have more than 5,000,000 people",
        "SELECT state_name FROM state WHERE population > 5000000",
        workspace="census",
    )
    report = mine_labeled(store, [exp], job_id="job-n", targets={"geoquery": db})

    (entry,) = comparisons(store)
    assert report.mined["comparison"] == 1 and report.candidate_ids == [entry.id]
    assert entry.name == "people"
    condition = entry.content_resources["condition"]
    assert condition.startswith("state.population compared with N")
    assert "5000000" not in condition and "5,000,000" not in condition  # the pattern only
    assert entry.content_resources["comparison"] == {
        "column": "state.population",
        "unit": "people",
    }
    assert "state.population > 5000000" in entry.description
    assert entry.parents == [exp.id] and entry.workspace == "census"
    (column,) = [store.get(r.object) for r in entry.related]
    assert column.name == "population"


def test_a_comparative_adjective_names_the_column_and_its_direction(geo):
    store, db = geo
    exps = [
        labeled(
            "what states are bigger than 100k square kilometers",
            "SELECT state_name FROM state WHERE area > 100000",
        ),
        labeled(
            "name the rivers longer than 1,000",
            "SELECT river_name FROM river WHERE length > 1000",
        ),
    ]
    mine_labeled(store, exps, targets={"geoquery": db})

    found = {e.name: e.content_resources for e in comparisons(store)}
    assert set(found) == {"bigger than", "longer than"}
    assert found["bigger than"]["condition"].startswith("state.area > N")
    assert found["longer than"]["comparison"]["op"] == ">"


def test_a_column_named_by_itself_or_a_number_the_sql_lacks_gives_nothing(geo):
    store, db = geo
    exps = [
        labeled(
            "cities with a population over 1 million",
            "SELECT city_name FROM city WHERE population > 1000000",
        ),
        labeled(  # the words say "more", the SQL says "<": not a comparison of that number
            "states with more than 3000000 people",
            "SELECT state_name FROM state WHERE population < 3000000",
        ),
    ]
    report = mine_labeled(store, exps, targets={"geoquery": db})
    assert comparisons(store) == [] and report.known >= 1


def test_re_mining_the_pattern_from_another_number_adds_nothing(geo):
    store, db = geo
    first = labeled(
        "which states have more than 5,000,000 people",
        "SELECT state_name FROM state WHERE population > 5000000",
    )
    other = labeled(
        "states with fewer than 1 million people",
        "SELECT state_name FROM state WHERE population < 1000000",
    )
    report = mine_labeled(store, [first, other], targets={"geoquery": db})

    (entry,) = comparisons(store)
    assert report.merge == {"inserted": 1} and set(entry.parents) == {first.id, other.id}


def test_an_active_comparison_is_found_for_a_new_number(geo):
    store, db = geo
    exp = labeled(
        "which states have more than 5,000,000 people",
        "SELECT state_name FROM state WHERE population > 5000000",
    )
    (candidate,) = mine_labeled(store, [exp], targets={"geoquery": db}).candidate_ids
    activate(store, [candidate])
    retriever = IndexSet.build(store, vectors=False, experiences=False).retriever()

    evidence = retriever.retrieve(
        "how many states have at least 2 million people", QueryContext(database="geoquery")
    )
    assert candidate in evidence.ids()


@pytest.mark.parametrize(
    ("text", "value"),
    [("5k", 5e3), ("5,000", 5e3), ("10 million", 1e7), ("1.5bn", 1.5e9), ("42", 42.0)],
)
def test_numbers_are_read_however_they_are_written(text, value):
    assert parse_number(text) == value


def test_comparative_words_are_found_before_the_number():
    (over,) = number_mentions("cities over 10 million")
    assert (over.comparator, over.value, over.generic) == ("over", 1e7, True)
    assert over.allows(">") and not over.allows("<")
    (bigger,) = number_mentions("states bigger than 5k")
    assert (bigger.comparator, bigger.generic) == ("bigger than", False)
    assert number_mentions("FY2024 revenue")[0:1] == []


def test_a_threshold_the_question_does_not_say_is_named_by_its_word(geo):
    store, db = geo
    exps = [
        labeled(
            "what are the major cities in texas",
            "SELECT city_name FROM city WHERE population > 150000 AND state_name = 'texas'",
        ),
        labeled(  # negated: no entry, and no conflict with the one above
            "which capitals are not major cities",
            "SELECT s.capital FROM city AS c, state AS s "
            "WHERE c.population <= 150000 AND s.capital = c.city_name",
        ),
    ]
    report = mine_labeled(store, exps, targets={"geoquery": db})

    (entry,) = comparisons(store)
    assert entry.name == "major cities"
    assert entry.content_resources["condition"] == "city.population > 150000"
    assert entry.content_resources["comparison"]["value"] == 150000
    assert report.merge.get("dropped") is None


def test_the_direction_of_a_comparative_must_match_the_operator():
    (lighter,) = number_mentions("models lighter than 3500")
    (older,) = number_mentions("students older than 20")
    assert lighter.allows("<") and not lighter.allows(">")
    assert older.allows(">=") and not older.allows("<=")
