import numpy as np

from indices.experience_spaces import ExperienceSpaces


def _unit(*values: float) -> np.ndarray:
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def _spaces() -> ExperienceSpaces:
    spaces = ExperienceSpaces(2)
    vectors = np.stack([_unit(1, 0), _unit(1, 0.1), _unit(0, 1), _unit(1, 0.2)])
    spaces.add(
        ["a", "b", "c", "d"],
        vectors,
        [("shop",), ("zoo",), ("shop",), ()],
        [True, False, True, True],
    )
    return spaces


def test_nearest_keeps_the_database_and_untagged_experiences():
    found = _spaces().nearest("all", _unit(1, 0)[None, :], 3, "shop")
    assert [uid for uid, _ in found] == ["a", "d", "c"]  # b belongs to zoo only
    assert found[0][1] > found[1][1] > found[2][1]


def test_labeled_scope_has_only_labeled_rows():
    found = _spaces().nearest("labeled", _unit(1, 0.1)[None, :], 4, None)
    assert {uid for uid, _ in found} == {"a", "c", "d"}


def test_removed_rows_are_gone_and_uncounted():
    spaces = _spaces()
    spaces.remove(["a", "d", "unknown"])
    assert [uid for uid, _ in spaces.nearest("all", _unit(1, 0)[None, :], 3, "shop")] == ["c"]
    spaces.remove(["c"])
    assert spaces.nearest("all", _unit(1, 0)[None, :], 3, "shop") == []  # nothing left to search
    assert [uid for uid, _ in spaces.nearest("all", _unit(1, 0)[None, :], 3, None)] == ["b"]


def test_reset_empties_every_scope():
    spaces = _spaces()
    spaces.reset(3)
    assert spaces.nearest("all", _unit(1, 0, 0)[None, :], 2, None) == []
    spaces.add(["e"], _unit(0, 0, 1)[None, :], [()], [False])
    assert [uid for uid, _ in spaces.nearest("all", _unit(0, 0, 1)[None, :], 2, "any")] == ["e"]
    assert spaces.nearest("labeled", _unit(0, 0, 1)[None, :], 2, None) == []
