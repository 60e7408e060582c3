"""Query templates mined from labeled GeoQuery questions: one slot per value the question
says, typed by its column; a group of two experiences makes a candidate, one does not;
re-mining inserts nothing; a literal the question does not say stays in the SQL."""

from __future__ import annotations

from agents.learn.mine import mine_labeled
from agents.learn.mine.candidates import is_candidate
from agents.learn.mine.templates import fill, mine_templates, slotted
from tests.agents.learn.conftest import labeled

ALASKA = (
    "what is the population of alaska",
    "SELECT population FROM state WHERE state_name = 'alaska'",
)
TEXAS = (
    "what is the population of texas",
    "SELECT population FROM state WHERE state_name = 'texas'",
)
KEY = "SELECT population FROM state WHERE state_name = :slot0"


def templates_in(store):
    return [
        e
        for e in store.iterate(type="knowledge", active=None)
        if e.content_resources.get("kind") == "template"
    ]


def test_a_value_the_question_says_is_a_slot_typed_by_its_aliased_column():
    shape = slotted(
        "how long is the mississippi in texas",
        'SELECT r.length FROM river AS r WHERE r.river_name = "mississippi" '
        "AND r.traverse IN ('texas') AND r.country_name = 'usa'",
    )
    assert shape is not None
    assert shape.values == ("mississippi", "texas")
    assert [s.columns for s in shape.slots] == [
        (("river", "river_name"),),
        (("river", "traverse"),),
    ]
    # 'usa' is not said: it stays a constant of the template
    assert "'usa'" in shape.key and ":slot0" in shape.key and ":slot1" in shape.key
    assert fill(shape.key, ["ohio", "utah"]) == (
        "SELECT r.length FROM river AS r WHERE r.river_name = 'ohio' "
        "AND r.traverse IN ('utah') AND r.country_name = 'usa'"
    )


def test_the_same_shape_gives_one_key_and_a_word_inside_another_is_not_said():
    assert slotted(*ALASKA).key == slotted(*TEXAS).key == KEY
    shape = slotted("what is the population of texas", "SELECT 1 FROM city WHERE city_name = 'tex'")
    assert shape is not None and not shape.slots and "'tex'" in shape.key


def test_two_experiences_make_one_candidate_template_and_one_makes_none(geo):
    store, database = geo
    alaska, texas = labeled(*ALASKA), labeled(*TEXAS)
    report = mine_labeled(store, [alaska], job_id="one", targets={"geoquery": database})
    assert report.mined["template"] == 0 and not templates_in(store)

    report = mine_labeled(store, [alaska, texas], job_id="two", targets={"geoquery": database})
    assert report.mined["template"] == 1
    (template,) = templates_in(store)
    assert is_candidate(template) and template.inactive_mark
    assert template.content_resources["sql"] == KEY
    # what a prompt shows names the slot's column, never a placeholder
    shown = "SELECT population FROM state WHERE state_name = '<state.state_name>'"
    assert template.name == f"query template {shown}" and ":slot" not in template.text()
    assert template.content_resources["slots"] == [{"columns": [["state", "state_name"]]}]
    assert sorted(template.parents) == sorted([alaska.id, texas.id])
    assert template.metadata["template"]["support"] == 2
    assert template.metadata["mining"]["job_id"] == "two"
    assert "geoquery" in template.tag_values("DATABASE")

    again = mine_labeled(store, [alaska, texas], job_id="three", targets={"geoquery": database})
    assert again.mined["template"] == 1 and again.merge.get("inserted", 0) == 0
    assert len(templates_in(store)) == 1


def test_earlier_labeled_experiences_support_a_template_mined_from_a_new_one(geo):
    store, database = geo
    stored = [labeled(*ALASKA), labeled(*TEXAS)]
    store.upsert_many(stored)  # the labeled history the next run mines templates over
    ohio = labeled("what is the population of ohio", KEY.replace(":slot0", "'ohio'"))
    report = mine_labeled(store, [ohio], job_id="more", targets={"geoquery": database})
    assert report.mined["template"] == 1
    (template,) = templates_in(store)
    # the run's own supporter is its source; the earlier ones count as support
    assert template.parents == [ohio.id]
    assert template.metadata["template"]["support"] == 3
    assert sorted(template.metadata["template"]["supporters"]) == sorted(
        e.id for e in [*stored, ohio]
    )


def test_constants_only_and_writes_make_no_template():
    said_nothing = [
        labeled(
            "how many states are there", "SELECT COUNT(*) FROM state WHERE country_name = 'usa'"
        ),
        labeled("count the states", "SELECT COUNT(*) FROM state WHERE country_name = 'usa'"),
    ]
    assert mine_templates(said_nothing, job_id="j", miner="labeled") == []
    writes = [
        labeled(f"delete {s}", f"DELETE FROM state WHERE state_name = '{s}'")
        for s in ("ohio", "utah")
    ]
    assert mine_templates(writes, job_id="j", miner="labeled") == []
    pair = [labeled(*ALASKA), labeled(*TEXAS)]
    assert len(mine_templates(pair, job_id="j", miner="labeled")) == 1
    assert mine_templates(pair, job_id="j", miner="labeled", min_support=3) == []
