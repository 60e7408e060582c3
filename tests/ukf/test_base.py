import json
import subprocess
import sys

import pytest
from pydantic import ValidationError

from tests.support.samples import every_template
from ukf import (
    MINING_KEY,
    BaseUKF,
    FrozenFieldError,
    IdMismatchError,
    KnowledgeUKF,
    TableUKF,
    UnknownTypeError,
    bump_version,
)


def test_id_hashes_identity_fields_and_content_hash_the_payload():
    a = KnowledgeUKF.create("BCR", "actual / budget")
    b = KnowledgeUKF.create("BCR", "something else")
    assert a.id == b.id
    assert a.content_hash != b.content_hash
    assert KnowledgeUKF.create("BCR", "x", tags=["[DOMAIN:finance]"]).id != a.id
    assert len(a.id) == 32 and int(a.id, 16) >= 0


def test_tag_order_does_not_change_the_id():
    one = KnowledgeUKF(name="x", tags=["[A:1]", "[B:2]"])
    two = KnowledgeUKF(name="x", tags=["[B:2]", "[A:1]", "[A:1]"])
    assert one.id == two.id and one.tags == ("[A:1]", "[B:2]")


def test_ids_are_stable_across_processes():
    code = (
        "from tests.support.samples import every_template;"
        "print(','.join(e.id + ':' + e.content_hash for e in every_template()))"
    )
    runs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PATH": ""},
        ).stdout.strip()
        for seed in ("1", "2")
    }
    here = ",".join(e.id + ":" + e.content_hash for e in every_template())
    assert runs == {here}


@pytest.mark.parametrize(
    "field",
    [
        "type",
        "name",
        "version",
        "variant",
        "source",
        "creator",
        "owner",
        "workspace",
        "collection",
        "tags",
        "timefluid",
    ],
)
def test_identity_fields_are_frozen(field):
    entry = KnowledgeUKF.create("BCR", "actual / budget")
    with pytest.raises(FrozenFieldError, match=field):
        setattr(entry, field, "other")


def test_non_identity_fields_can_change_and_the_id_stays():
    entry = KnowledgeUKF.create("BCR", "actual / budget")
    before = entry.id
    entry.content = "actual divided by budget"
    entry.synonyms = ["budget completion", "budget completion", " "]
    assert entry.id == before
    assert entry.synonyms == ["budget completion"]


def test_derive_makes_a_new_version_with_its_parent():
    entry = KnowledgeUKF.create("BCR", "actual / budget")
    child = entry.derive(content="actual / budget, in percent")
    assert child.version == "v2" and child.parents == [entry.id]
    assert child.id != entry.id and child.content != entry.content
    assert bump_version("1.9") == "1.10" and bump_version("beta") == "beta.1"


def test_clone_copies_and_may_change_identity():
    entry = KnowledgeUKF.create("BCR", "x")
    assert entry.clone() == entry
    other = entry.clone(name="BCR2")
    assert other.name == "BCR2" and other.id != entry.id and entry.name == "BCR"


def test_from_dict_returns_the_registered_template_class():
    for entry in every_template():
        again = BaseUKF.from_dict(json.loads(entry.to_json()))
        assert type(again) is type(entry)
        assert again == entry
        assert again.to_json() == entry.to_json()


def test_unknown_type_names_the_type_field():
    with pytest.raises(UnknownTypeError, match=r"'gizmo' in field 'type'"):
        BaseUKF.from_dict({"type": "gizmo", "name": "x"})


def test_a_tampered_id_is_detected():
    data = KnowledgeUKF.create("BCR", "x").to_dict()
    data["name"] = "BCR!"
    with pytest.raises(IdMismatchError, match="'id'"):
        BaseUKF.from_dict(data)


def test_bad_fields_fail_with_the_field_name():
    with pytest.raises(ValidationError, match="tags"):
        KnowledgeUKF(name="x", tags=["[OK:1]", "broken"])
    with pytest.raises(ValidationError, match="source"):
        KnowledgeUKF(name="x", source="martians")
    with pytest.raises(ValidationError, match=r"colour"):
        KnowledgeUKF(name="x", colour="red")


def test_naive_datetimes_are_taken_as_utc():
    from datetime import datetime

    entry = KnowledgeUKF(name="x", timestamp=datetime(2025, 1, 1, 12))
    assert entry.timestamp.utcoffset().total_seconds() == 0


def test_authoritative_means_schema_user_or_verified():
    table = TableUKF.create("db", "t")
    assert table.is_authoritative
    mined = KnowledgeUKF.create("x", "y", source="auto")
    assert not mined.is_authoritative
    assert mined.clone(last_verified=mined.timestamp).is_authoritative


def test_mined_means_a_mining_note_in_the_metadata():
    assert not KnowledgeUKF.create("x", "y", source="auto").is_mined
    mined = KnowledgeUKF.create("x", "y", source="auto", metadata={MINING_KEY: {"job_id": "j"}})
    assert mined.is_mined and mined.clone(last_verified=mined.timestamp).is_mined
