"""Preferences mined from many labeled GeoQuery experiences: a filter one user (or a profile)
applies without naming it becomes a scoped intent rule; named values, rare habits and values
the column lacks do not; the retriever shows the rule to its scope only."""

from __future__ import annotations

from agents.learn.mine import activate
from agents.learn.mine.labeled import kind_of
from agents.learn.mine.preferences import mine_preferences, scopes_of
from indices.index_set import IndexSet
from kb.merge import merge_mined
from tests.agents.learn.conftest import labeled
from ukf import QueryContext, Reader, RuleUKF

# a Texas analyst's questions: Texas is meant, never said
TEXAN = [
    ("what is the biggest city", "SELECT city_name FROM city WHERE state_name = 'texas' "
     "ORDER BY population DESC LIMIT 1"),
    ("how many cities are there", "SELECT COUNT(*) FROM city WHERE state_name = 'texas'"),
    ("what is the highest point", "SELECT highest_point FROM highlow WHERE state_name = 'texas'"),
    ("what is the population", "SELECT population FROM state WHERE state_name = 'texas'"),
    ("how big is ohio", "SELECT area FROM state WHERE state_name = 'ohio'"),
]  # fmt: skip


def texan(owner: str = "tx", **fields: object) -> list:
    return [labeled(q, sql, owner=owner, **fields) for q, sql in TEXAN]


def test_a_users_unnamed_habit_becomes_their_own_preference(geo):
    store, db = geo
    exps = texan()
    found = mine_preferences(store, exps, job_id="job-h", targets={"geoquery": db})

    (rule,) = [e for e in found.entries if e.variant == "user:tx"]
    assert kind_of(rule) == "preference" and rule.type == "rule"
    assert rule.name == "default state_name texas" and rule.owner == "tx"
    assert rule.content == (
        "Unless the question names another state_name, filter state_name = 'texas'."
    )
    assert rule.content_resources["preference"]["scope"] == "user:tx"
    assert set(rule.parents) == {e.id for e in exps[:4]}  # the Ohio question named its state
    assert "4 of 5 questions" in rule.description
    assert rule.metadata["mining"]["job_id"] == "job-h" and rule.inactive_mark


def test_named_values_rare_habits_and_unknown_values_give_no_preference(geo):
    store, db = geo
    named = [labeled(f"{q} in texas", sql, owner="ann") for q, sql in TEXAN[:4]]
    rare = [labeled(q, sql, owner="bob") for q, sql in TEXAN[:2]]
    atlantis = [
        labeled(q, sql.replace("'texas'", "'atlantis'"), owner="cy") for q, sql in TEXAN[:4]
    ]
    found = mine_preferences(store, named + rare + atlantis, job_id="j", targets={"geoquery": db})

    assert found.entries == []
    assert found.dropped == {"unknown_value": 1}


def test_a_profile_habit_generalizes_to_every_user_with_that_profile(geo):
    store, db = geo
    profile = {"user_profile": {"home_state": "texas"}}
    exps = [
        labeled(q, sql, context={**profile, "user_profile": {"home_state": "texas", "user": u}})
        for (q, sql), u in zip(TEXAN[:4], ["ann", "bob", "cy", "dee"], strict=True)
    ]
    assert "profile:home_state=texas" in scopes_of(exps[0])
    found = mine_preferences(store, exps, job_id="j", targets={"geoquery": db})

    (rule,) = [e for e in found.entries if e.variant.startswith("profile:")]
    assert rule.triggers == {"user_profile_match": {"home_state": "texas"}}
    assert rule.owner is None and rule.workspace is None
    merge_mined(store, found.entries, include_inactive=True)
    activate(store, [rule.id])
    retriever = IndexSet.build(store, vectors=False, experiences=False).retriever()

    at_home = QueryContext(database="geoquery", user_profile={"home_state": "texas"})
    elsewhere = QueryContext(database="geoquery", user_profile={"home_state": "ohio"})
    assert rule.id in retriever.retrieve("how many rivers are there", at_home).ids()
    assert rule.id not in retriever.retrieve("how many rivers are there", elsewhere).ids()


def test_an_active_user_preference_is_retrieved_for_that_user_only(geo):
    store, db = geo
    found = mine_preferences(store, texan(), job_id="j", targets={"geoquery": db})
    (rule,) = [e for e in found.entries if e.variant == "user:tx"]
    report = merge_mined(store, found.entries, include_inactive=True)
    assert report.counts() == {"inserted": len(found.entries)}
    activate(store, [rule.id])
    retriever = IndexSet.build(store, vectors=False, experiences=False).retriever()

    def seen_by(user: str) -> bool:
        context = QueryContext(database="geoquery", reader=Reader(user=user))
        evidence = retriever.retrieve("how many rivers are there", context)
        return rule.id in evidence.ids()

    assert seen_by("tx") and not seen_by("someone")
    again = mine_preferences(store, texan(), job_id="j2", targets={"geoquery": db})
    assert merge_mined(store, again.entries, include_inactive=True).counts() == {
        "merged": len(found.entries)
    }


def test_mine_labeled_mines_preferences_over_the_whole_history(geo):
    from agents.learn.mine import mine_labeled

    store, db = geo
    older, newer = texan()[:2], texan()[2:]
    store.upsert_many(older + newer)
    alone = mine_labeled(store, newer, targets={"geoquery": db}, apply=False)
    assert "preference" not in alone.mined  # two of three questions is not a habit yet
    report = mine_labeled(store, newer, targets={"geoquery": db}, habits_over=older + newer)
    assert report.mined["preference"] == 1
    (rule,) = [e for e in store.iterate(type="rule", active=None) if e.owner == "tx"]
    assert rule.metadata["mining"]["job_id"] == report.job_id


def _texan_office_rule(**triggers: dict) -> RuleUKF:
    return RuleUKF.create(
        "Texan office",
        "The Texan office's questions are about Texas.",
        kind="intent",
        database="geoquery",
        triggers=triggers,
        content_resources={"default_filter": {"column": "state_name", "value": "Texas"}},
    )


def test_a_filter_an_authored_rule_adds_is_no_habit(geo):
    """The chain adds a rule's default filter to every answer that lacks it where the rule's
    triggers accept the asker; the log then holds the filter whether or not the askers meant
    it: mining it again would be the rule's echo. A preference mined before is no authored
    filter: it is mined again."""
    store, db = geo
    first = mine_preferences(store, texan(), job_id="j1", targets={"geoquery": db})
    assert [e.variant for e in first.entries] == ["user:tx"]
    merge_mined(store, first.entries, include_inactive=True)
    again = mine_preferences(store, texan(), job_id="j2", targets={"geoquery": db})
    assert [e.variant for e in again.entries] == ["user:tx"] and not again.dropped

    store.upsert(_texan_office_rule(always={}))
    found = mine_preferences(store, texan(), job_id="j3", targets={"geoquery": db})
    assert found.entries == [] and found.dropped == {"authored_filter": 1}


def test_a_rule_for_other_askers_leaves_the_habit_to_be_mined(geo):
    """The Texan office's rule accepts askers whose profile says so; a user without that
    profile who filters Texas unasked has the habit of their own."""
    store, db = geo
    store.upsert(_texan_office_rule(user_profile_match={"office": "TX"}))
    found = mine_preferences(store, texan(), job_id="j", targets={"geoquery": db})
    assert [e.variant for e in found.entries] == ["user:tx"] and not found.dropped
    office = texan(context={"user_profile": {"office": "TX"}})
    found = mine_preferences(store, office, job_id="j", targets={"geoquery": db})
    assert found.entries == [] and found.dropped["authored_filter"] >= 1
