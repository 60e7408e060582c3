"""Precision rules of labeled mining on real GeoQuery data: a join between columns of
disjoint values, a phrase the log uses for several columns, a phrase most questions use
otherwise, a weakly aligned synonym with one supporting question; each refusal counted."""

from __future__ import annotations

from agents.learn.mine import mine_labeled
from agents.learn.mine.labeled import kind_of
from agents.learn.mine.schema_view import SchemaView
from agents.learn.mine.sql_facts import sql_facts
from agents.learn.mine.usage import SqlUse, lemmas_of
from tests.agents.learn.conftest import labeled


def mined(store) -> list:
    return list(store.iterate(source="auto", active=None))


def test_sql_facts_read_a_subquery_link_as_a_join_of_its_columns():
    facts = sql_facts(
        "SELECT s.state_name FROM state AS s WHERE s.state_name IN "
        "(SELECT b.border FROM border_info AS b WHERE b.state_name = 'texas')"
    )
    (link,) = facts.links
    assert link.condition == "border_info.border = state.state_name"
    assert facts.joins == []


def test_columns_of_disjoint_values_do_not_overlap_on_the_target(geo):
    store, db = geo
    view = SchemaView(store, "geoquery", target=db)
    traverse, capital = view.column("river", "traverse"), view.column("state", "capital")
    state_name, city_name = view.column("state", "state_name"), view.column("city", "city_name")
    assert view.overlap(traverse, capital) == "disjoint"  # states vs cities
    assert view.overlap(traverse, view.column("state", "state_name")) == "shared"
    assert view.overlap(city_name, capital) == "shared"
    assert SchemaView(store, "geoquery").overlap(state_name, capital) == "disjoint"  # enums
    assert SchemaView(store, "geoquery").overlap(city_name, capital) == "unchecked"


def test_a_join_of_columns_without_shared_values_is_dropped_and_counted(geo):
    store, db = geo
    wrong = labeled(
        "which rivers run through states whose capital is austin",
        "SELECT r.river_name FROM river AS r JOIN state AS s ON r.traverse = s.capital "
        "WHERE s.capital = 'austin'",
    )
    right = labeled(
        "which rivers run through the state whose capital is austin",
        "SELECT r.river_name FROM river AS r JOIN state AS s ON r.traverse = s.state_name "
        "WHERE s.capital = 'austin'",
    )
    report = mine_labeled(store, [wrong, right], targets={"geoquery": db})

    joins = [e.content_resources for e in mined(store) if kind_of(e) == "join"]
    assert [(j["left_columns"], j["right_columns"]) for j in joins] == [
        (["traverse"], ["state_name"])
    ]
    assert report.dropped["join_values_disjoint"] == 1


POPULOUS = [
    ("what is the most populous city in the us", "city"),
    ("which city is the most populous", "city"),
    ("which state is the most populous", "state"),
]


def test_a_phrase_the_log_maps_to_several_columns_is_dropped_as_ambiguous(geo):
    store, db = geo
    exps = [
        labeled(
            question,
            f"SELECT {table}_name FROM {table} WHERE population = "
            f"(SELECT MAX(population) FROM {table})",
        )
        for question, table in POPULOUS
    ]
    cities = mine_labeled(store, exps[:2], targets={"geoquery": db}, apply=False)
    assert cities.mined["column_synonym"] == 2  # "populous" → city.population, twice

    report = mine_labeled(store, exps, targets={"geoquery": db})

    # "populous" → city.population in 2 of the 3 questions saying it: not clear enough
    assert not [e for e in mined(store) if e.name == "populous"]
    assert report.dropped["ambiguous_phrase"] == 2  # the city and the state synonym


def test_a_phrase_most_questions_use_for_another_column_is_dropped(geo):
    store, db = geo
    threshold = labeled(
        "what are the big cities in texas",
        "SELECT city_name FROM city WHERE population > 150000 AND state_name = 'texas'",
    )
    others = [
        labeled(
            f"what is the biggest city in {state}",
            f"SELECT city_name FROM city WHERE state_name = '{state}' AND population = "
            f"(SELECT MAX(population) FROM city WHERE state_name = '{state}')",
        )
        for state in ("kansas", "ohio")
    ]
    alone = mine_labeled(store, [threshold], targets={"geoquery": db}, apply=False)
    assert alone.mined["comparison"] == 1  # "big cities" → population > 150000

    report = mine_labeled(store, [threshold, *others], targets={"geoquery": db})

    assert not [e for e in mined(store) if kind_of(e) == "comparison"]
    assert report.dropped["conflicting_evidence"] == 1


def test_a_weakly_aligned_synonym_needs_two_supporting_questions(geo):
    store, db = geo
    # "elevated" shares only a prefix with highest_elevation: one question is not enough
    first = labeled(
        "how elevated is the top of alaska",
        "SELECT highest_elevation FROM highlow WHERE state_name = 'alaska'",
    )
    second = labeled(
        "how elevated is the top of texas",
        "SELECT highest_elevation FROM highlow WHERE state_name = 'texas'",
    )
    once = mine_labeled(store, [first], targets={"geoquery": db})
    assert once.dropped["low_support"] == 1 and not once.candidate_ids

    twice = mine_labeled(store, [first, second], targets={"geoquery": db})
    (entry,) = [e for e in mined(store) if kind_of(e) == "column_synonym"]
    assert entry.name == "elevated" and twice.dropped["low_support"] == 0
    assert entry.content_resources["column"] == "highest_elevation"


def test_an_exactly_aligned_phrase_needs_one_question(geo):
    store, db = geo
    exp = labeled(
        "what is the lowest spot in texas",
        "SELECT lowest_point FROM highlow WHERE state_name = 'texas'",
    )
    report = mine_labeled(store, [exp], targets={"geoquery": db})
    assert [e.name for e in mined(store)] == ["lowest spot"]  # "lowest" is a word of the name
    assert "low_support" not in report.dropped


def test_a_conflicting_phrase_is_kept_scoped_by_the_word_before_it(geo):
    store, db = geo
    exps = [
        labeled(
            f"how high is {state}",
            f"SELECT highest_elevation FROM highlow WHERE state_name = '{state}'",
        )
        for state in ("alaska", "texas")
    ]
    exps += [
        labeled(
            f"what is the highest point of {state}",
            f"SELECT highest_point FROM highlow WHERE state_name = '{state}'",
        )
        for state in ("ohio", "iowa")
    ]
    report = mine_labeled(store, exps, targets={"geoquery": db})

    # "high": 2 of the 4 questions saying it read highest_elevation; "how high": 2 of 2
    assert report.dropped["conflicting_evidence"] == 1
    (entry,) = [e for e in mined(store) if kind_of(e) == "column_synonym"]
    assert (entry.name, entry.content) == ("how high", "how high means highlow.highest_elevation")
    assert entry.metadata["mining"]["how"] == "context"


def test_a_question_judges_a_mined_element_by_what_its_sql_uses(geo):
    store, _ = geo
    view = SchemaView(store, "geoquery")
    about_states = SqlUse(
        "how many people live in texas",
        "SELECT population FROM state WHERE state_name = 'texas'",
        view,
    )
    people = lemmas_of("people")
    assert about_states.judge(("column", "state", "population"), people) is True
    assert about_states.judge(("column", "city", "population"), people) is False
    assert about_states.judge(("column", "city", "population"), lemmas_of("folks")) is None
    linked = SqlUse(
        "which rivers run through states bordering texas",
        "SELECT river_name FROM river WHERE traverse IN "
        "(SELECT border FROM border_info WHERE state_name = 'texas')",
        view,
    )
    assert linked.judge(("join", "border_info", "border", "river", "traverse"), ()) is True
    assert linked.judge(("join", "border_info", "state_name", "river", "traverse"), ()) is False
    assert linked.judge(("join", "city", "city_name", "state", "capital"), ()) is None
