"""Extraction again: an unchanged document does nothing, a changed one replaces what its old
version gave, and a stopped run resumes where it stopped."""

from __future__ import annotations

import copy

import pytest

from agents.learn.documents import extract_documents
from agents.learn.documents.extractor import LLMSectionExtractor
from agents.llm.base import Cancellation, LLMCancelledError
from kb.documents import read_document
from tests.agents.learn.test_extract_documents import (
    ANSWERS,
    HANDBOOK,
    _extract,
    concert,  # noqa: F401  (fixture)
    scripted_reply,
)
from tests.agents.scripted import ScriptedLLM


def test_an_unchanged_document_is_not_read_again(concert, tmp_path):  # noqa: F811
    store, database = concert
    path = tmp_path / "handbook.md"
    path.write_text(HANDBOOK, encoding="utf-8")
    first = _extract(store, database, path, ScriptedLLM([scripted_reply(ANSWERS)]))
    version = store.version
    llm = ScriptedLLM([scripted_reply(ANSWERS)])
    again = _extract(store, database, path, llm)
    assert llm.calls == [] and again.llm_calls == 0
    assert [d["status"] for d in again.documents] == ["unchanged"]
    assert again.candidate_ids == [] and again.retracted_ids == []
    assert store.version == version
    assert first.candidate_ids  # the first run did write


def test_a_changed_document_replaces_its_old_entries(concert, tmp_path):  # noqa: F811
    store, database = concert
    path = tmp_path / "handbook.md"
    path.write_text(HANDBOOK, encoding="utf-8")
    first = _extract(store, database, path, ScriptedLLM([scripted_reply(ANSWERS)]), activate=True)
    named = {e.id: e.name for e in store.get_many(first.candidate_ids).values()}
    dutch = next(e for e in store.get_many(first.candidate_ids).values() if e.name == "dutch")
    changed = copy.deepcopy(ANSWERS)
    changed["Terms"]["terms"] = changed["Terms"]["terms"][1:]  # "vocalist" is gone
    changed["Metrics"]["metrics"][0]["formula"] = "SUM(stadium.Average) / SUM(stadium.Capacity)"
    path.write_text(HANDBOOK.replace("a singer", "a singer or a band"), encoding="utf-8")
    second = _extract(store, database, path, ScriptedLLM([scripted_reply(changed)]))
    assert {named[i] for i in second.retracted_ids} == {"vocalist", "performer", "fill rate"}
    remaining = {e.name: e for e in store.iterate(source="auto", active=None)}
    assert "vocalist" not in remaining and "performer" not in remaining
    assert remaining["fill rate"].content_resources["formula"].startswith("SUM(")
    new_sha = read_document(path).sha256
    assert remaining["fill rate"].metadata["document"]["sha256"] == new_sha
    # what the new version says again stays as it was (still active, same id)
    kept = store.get(dutch.id)
    assert not kept.inactive_mark and dutch.id not in second.retracted_ids
    assert kept.metadata["document"]["sha256"] == new_sha
    assert second.merge.get("merged", 0) == 8 and second.merge.get("inserted") == 1


def test_a_stopped_run_resumes_without_reading_done_parts_again(concert, tmp_path):  # noqa: F811
    store, database = concert
    path = tmp_path / "handbook.md"
    path.write_text(HANDBOOK, encoding="utf-8")
    token = Cancellation()

    def stop_after_two(done: int, _total: int, _name: str) -> None:
        if done == 2:
            token.cancel("stopped by the test")

    llm = ScriptedLLM([scripted_reply(ANSWERS)])
    with pytest.raises(LLMCancelledError):
        extract_documents(
            store,
            [read_document(path)],
            LLMSectionExtractor(llm),
            database="concert_singer",
            target=database,
            progress=stop_after_two,
            cancellation=token,
        )
    assert len(llm.calls) == 2
    assert not list(store.iterate(source="auto", type="synonym", active=None))
    llm = ScriptedLLM([scripted_reply(ANSWERS)])
    report = _extract(store, database, path, llm)
    assert len(llm.calls) == 2 and report.resumed_parts == 2 and report.read_parts == 2
    assert report.merge == {"inserted": 11}
