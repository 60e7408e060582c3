"""Mining labeled experiences on real databases (GeoQuery, Spider world_1): what each kind of
fact becomes, what is dropped or skipped, re-mining, and candidates that retrieval ignores."""

from __future__ import annotations

from agents.learn.mine import activate, candidates, is_candidate, mine_labeled
from agents.learn.mine.labeled import kind_of
from indices.index_set import IndexSet
from tests.agents.learn.conftest import labeled
from ukf import BaseUKF, ExperienceUKF

TEXAS = "state.state_name = 'texas'"


def mined(store, **criteria) -> list[BaseUKF]:
    return [e for e in store.iterate(source="auto", active=None, **criteria)]


def only(entries: list[BaseUKF], kind: str) -> BaseUKF:
    found = [e for e in entries if kind_of(e) == kind]
    assert len(found) == 1, [(kind_of(e), e.name, e.content) for e in entries]
    return found[0]


def test_initials_of_a_value_become_a_synonym_of_its_enum(geo):
    store, db = geo
    exp = labeled(
        "how many people live in NC",
        "SELECT s.population FROM state AS s WHERE s.state_name = 'north carolina'",
        workspace="sales",
    )
    report = mine_labeled(store, [exp], job_id="job-1", targets={"geoquery": db})

    entry = only(mined(store), "value_synonym")
    assert entry.name == "NC"
    assert entry.content == "NC means state.state_name = 'north carolina'"
    target = store.get(entry.content_resources["target"])
    assert target.type == "enum" and target.content_resources["value"] == "north carolina"
    assert entry.source == "auto" and entry.parents == [exp.id]
    assert entry.workspace == "sales" and entry.owner is None
    note = entry.metadata["mining"]
    assert note["job_id"] == "job-1" and note["how"] == "initials"
    assert note["trust"] == "labeled" and note["miner"] == "labeled"
    assert is_candidate(entry)
    assert report.mined["value_synonym"] == 1 and report.candidate_ids == [entry.id]


def test_a_value_without_enum_becomes_a_predicate_checked_on_the_target(geo):
    store, db = geo
    exp = labeled(
        "how many people live in houston",
        "SELECT population FROM city WHERE city_name = 'houston'",
    )
    report = mine_labeled(store, [exp], targets={"geoquery": db})

    entry = only(mined(store), "predicate")
    assert entry.name == "houston"
    assert entry.content_resources["condition"] == "city.city_name = 'houston'"
    column = store.get(entry.related[0].object)
    assert (column.type, column.name) == ("column", "city_name")
    assert report.unchecked_values == 0 and not report.dropped


def test_an_unaligned_column_phrase_becomes_a_column_synonym(geo):
    store, db = geo
    exp = labeled(
        "what is the lowest spot in texas",
        "SELECT h.lowest_point FROM highlow AS h WHERE h.state_name = 'texas'",
    )
    mine_labeled(store, [exp], targets={"geoquery": db})

    entry = only(mined(store), "column_synonym")
    assert entry.name == "lowest spot"
    assert entry.content == "lowest spot means highlow.lowest_point"
    assert (entry.content_resources["table"], entry.content_resources["column"]) == (
        "highlow",
        "lowest_point",
    )


def test_a_formula_becomes_a_metric_named_by_the_question(world):
    store, db = world
    exp = labeled(
        "What is the population density of Aruba?",
        "SELECT Population / SurfaceArea FROM country WHERE Name = 'Aruba'",
        database="world_1",
    )
    report = mine_labeled(store, [exp], targets={"world_1": db})

    entry = only(mined(store), "metric")
    assert entry.name == "population density"
    assert entry.content_resources["formula"] == "country.population / country.surfacearea"
    used = {store.get(r.object).name for r in entry.related}
    assert used == {"Population", "SurfaceArea"}
    value = only(mined(store), "predicate")  # Name has too many values for enums
    assert (value.name, value.content) == ("aruba", "country.Name = 'Aruba'")
    assert report.merge == {"inserted": 2}


def test_a_join_without_foreign_key_feeds_the_graph_once_activated(geo):
    store, db = geo
    exp = labeled(
        "what is the capital of the state where houston is",
        "SELECT s.capital FROM state AS s JOIN city AS c ON c.state_name = s.state_name "
        "WHERE c.city_name = 'houston'",
    )
    mine_labeled(store, [exp], targets={"geoquery": db})
    join = only(mined(store), "join")
    assert join.content_resources["left_table"] == "city"
    tables = {e.name: e.id for e in store.iterate(type="table")}

    indices = IndexSet.build(store, vectors=False, experiences=False)
    assert indices.graph.join_path(tables["city"], tables["state"]) == []

    activate(store, [join.id])
    indices.refresh(wait=True)
    (step,) = indices.graph.join_path(tables["city"], tables["state"])
    assert (step["columns"], step["ref_columns"]) == (["state_name"], ["state_name"])


def test_unknown_column_and_value_are_dropped_and_counted(geo):
    store, db = geo
    exps = [
        labeled(
            "what is the nickname of the lone star state",
            "SELECT nickname FROM state WHERE state_name = 'texas'",
        ),
        labeled(
            "how many people live in atlantis",
            "SELECT population FROM state WHERE state_name = 'atlantis'",
        ),
    ]
    report = mine_labeled(store, exps, targets={"geoquery": db})

    assert report.dropped == {"unknown_column": 1, "unknown_value": 1}
    assert report.mined_experiences == 2 and not report.skipped
    assert not [e for e in mined(store) if "atlantis" in e.content or "nickname" in e.content]


def test_experiences_that_cannot_be_mined_are_skipped_with_their_reason(geo):
    store, db = geo
    broken = labeled("how big is texas", "SELEC area FROM state WHERE")
    moved = labeled("how many planets are there", "SELECT COUNT(*) FROM planet")
    unlabeled = ExperienceUKF.create(
        "what is the area of texas", "SELECT area FROM state", database="geoquery"
    )
    report = mine_labeled(store, [broken, moved, unlabeled], targets={"geoquery": db})

    reasons = {s["experience_id"]: s["reason"] for s in report.skipped}
    assert reasons[broken.id].startswith("SQL does not parse")
    assert reasons[moved.id] == "table(s) ['planet'] not in the profile of 'geoquery'"
    assert reasons[unlabeled.id] == "not labeled"
    assert report.mined_experiences == 0 and not mined(store)


def test_re_mining_the_same_experiences_adds_nothing(geo):
    store, db = geo
    exps = [
        labeled(
            "how many people live in NC",
            "SELECT population FROM state WHERE state_name = 'north carolina'",
        ),
        labeled("what is the lowest spot in texas", "SELECT lowest_point FROM highlow"),
        labeled(
            "how many people live in houston",
            "SELECT population FROM city WHERE city_name = 'houston'",
        ),
    ]
    first = mine_labeled(store, exps, targets={"geoquery": db})
    count = store.count(active=None)
    again = mine_labeled(store, exps, targets={"geoquery": db})

    assert len(first.candidate_ids) == 3
    assert again.candidate_ids == [] and "inserted" not in again.merge
    assert again.merge == {"merged": 3}
    assert store.count(active=None) == count
    assert {e.id for e in candidates(store)} == set(first.candidate_ids)


def test_candidates_are_not_retrieved_until_activated(geo):
    store, db = geo
    exp = labeled(
        "how many people live in NC",
        "SELECT population FROM state WHERE state_name = 'north carolina'",
    )
    report = mine_labeled(store, [exp], targets={"geoquery": db})
    (candidate,) = report.candidate_ids
    retriever = IndexSet.build(store, vectors=False, experiences=False).retriever()

    assert candidate not in retriever.retrieve("how many people live in NC").ids()

    assert activate(store, [candidate]) == [candidate]
    evidence = retriever.retrieve("how many people live in NC")
    assert candidate in evidence.ids()
    assert not is_candidate(store.get(candidate))
    assert store.get(candidate).metadata["mining"]["status"] == "active"


def test_with_rerun_an_experience_whose_sql_fails_on_the_target_is_skipped(geo):
    store, db = geo
    stale = labeled(
        "what is the nickname of texas", "SELECT nickname FROM state WHERE state_name = 'texas'"
    )
    report = mine_labeled(store, [stale], targets={"geoquery": db}, rerun=True)

    (skipped,) = report.skipped
    assert skipped["reason"].startswith("SQL no longer runs")
    assert "nickname" in skipped["reason"]
    assert report.mined_experiences == 0 and not report.dropped
