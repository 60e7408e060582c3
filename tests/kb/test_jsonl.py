"""JSON Lines export and import: exact round trips, and all-or-nothing imports."""

import io
import json

import pytest

from kb.errors import JSONLImportError
from kb.store import KnowledgeStore
from tests.support.samples import every_template


def test_export_import_export_is_byte_identical(store, tmp_path):
    entries = every_template()
    store.upsert_many(entries)
    store.remove(entries[0].id)  # inactive entries travel too
    first = tmp_path / "first.jsonl"
    assert store.export_jsonl(first) == len(entries)
    with KnowledgeStore(f"sqlite:///{tmp_path / 'other.db'}") as other:
        assert other.import_jsonl(first) == len(entries)
        second = io.StringIO()
        other.export_jsonl(second)
    assert second.getvalue() == first.read_text(encoding="utf-8")
    lines = [json.loads(line) for line in first.read_text().splitlines()]
    assert {(d["id"], d["content_hash"]) for d in lines} == {
        (e.id, e.content_hash) for e in store.iterate(active=None)
    }


def _lines(entries):
    return [e.to_json() for e in entries]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(type="gizmo"), r"line 3: unknown UKF type 'gizmo' in field 'type'"),
        (lambda d: d.update(tags=["[OK:1]", "broken"]), r"line 3: field 'tags"),
        (lambda d: d.update(priority="high"), r"line 3: field 'priority'"),
        (lambda d: d.update(name="renamed"), r"line 3: field 'id'"),
    ],
)
def test_a_bad_line_names_line_and_field_and_imports_nothing(store, tmp_path, mutate, message):
    lines = _lines(every_template())
    broken = json.loads(lines[2])
    mutate(broken)
    lines[2] = json.dumps(broken)
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    version = store.version
    with pytest.raises(JSONLImportError, match=message):
        store.import_jsonl(path)
    assert store.count(active=None) == 0 and store.version == version


def test_broken_json_names_the_line(store):
    lines = [*_lines(every_template()[:2]), '{"name": "half']
    with pytest.raises(JSONLImportError, match=r"<stream>, line 3: invalid JSON"):
        store.import_jsonl(io.StringIO("\n".join(lines)))
    assert store.count(active=None) == 0


def test_blank_lines_are_skipped(store):
    text = "\n\n".join(_lines(every_template()[:3])) + "\n\n"
    assert store.import_jsonl(io.StringIO(text)) == 3
