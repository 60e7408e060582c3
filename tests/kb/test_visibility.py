"""Who sees what: auths, and the global → workspace → user overlay."""

from kb.visibility import Reader, is_visible
from ukf import Auth, KnowledgeUKF


def _rule(content, **provenance):
    return KnowledgeUKF.create("fiscal year start", content, **provenance)


def test_auths_restrict_entries_to_listed_users_and_groups(store):
    secret = KnowledgeUKF.create("salary bands", "...", auths=[Auth(user="hr")])
    public = KnowledgeUKF.create("glossary", "...")
    store.upsert_many([secret, public])
    alice = Reader(user="alice")
    hr_member = Reader(user="bob", groups=frozenset({"hr"}))
    assert store.search_ids(reader=alice) == [public.id]
    assert set(store.search_ids(reader=hr_member)) == {secret.id, public.id}
    assert set(store.search_ids(reader=Reader(user="hr"))) == {secret.id, public.id}
    assert store.get_many([secret.id], reader=alice) == {}
    assert store.count() == 2  # no reader: system access


def test_workspace_and_user_layers_overlay_the_global_one(store):
    glob = _rule("January")
    team = _rule("April", workspace="emea")
    mine = _rule("July", workspace="emea", owner="alice")
    other_team = _rule("October", workspace="apac")
    store.upsert_many([glob, team, mine, other_team])

    def seen(reader):
        return [e.content for e in store.iterate(reader=reader)]

    assert seen(Reader(user="zed")) == ["January"]
    assert seen(Reader(user="bob", workspace="emea")) == ["April"]
    assert seen(Reader(user="alice", workspace="emea")) == ["July"]
    assert seen(Reader(user="carol", workspace="apac")) == ["October"]
    assert store.count(reader=Reader(user="alice", workspace="emea")) == 1
    assert store.count() == 4


def test_a_hidden_overlay_does_not_shadow(store):
    glob = _rule("January")
    restricted = _rule("April", workspace="emea", auths=[Auth(user="finance")])
    store.upsert_many([glob, restricted])
    assert [e.content for e in store.iterate(reader=Reader(user="bob", workspace="emea"))] == [
        "January"
    ]
    finance = Reader(user="bob", groups=frozenset({"finance"}), workspace="emea")
    assert [e.content for e in store.iterate(reader=finance)] == ["April"]


def test_an_inactive_overlay_does_not_shadow(store):
    glob, team = _rule("January"), _rule("April", workspace="emea")
    store.upsert_many([glob, team])
    store.remove(team.id)
    assert [e.content for e in store.iterate(reader=Reader(workspace="emea"))] == ["January"]


def test_python_and_sql_visibility_agree(store):
    entries = [
        _rule("a"),
        _rule("b", workspace="w"),
        _rule("c", owner="u"),
        KnowledgeUKF.create("x", "d", auths=[Auth(user="g")]),
        KnowledgeUKF.create("y", "e", workspace="w", owner="u", auths=[Auth(user="u")]),
    ]
    store.upsert_many(entries)
    for reader in [
        Reader(),
        Reader(user="u"),
        Reader(user="u", workspace="w"),
        Reader(user="v", groups=frozenset({"g"}), workspace="w"),
    ]:
        in_python = {e.id for e in entries if is_visible(e, reader)}
        in_sql = {e.id for e in store.get_many([e.id for e in entries], reader=reader).values()}
        assert in_python == in_sql, reader
