"""Extraction again: an unchanged document does nothing, a changed one replaces what its old
version gave, and a stopped run resumes where it stopped."""

from __future__ import annotations

import copy

import pytest

from agents.learn.documents import extract_documents
from agents.learn.documents.extractor import LLMSectionExtractor
from agents.learn.mine.candidates import ROLLED_BACK, activate, mining_note
from agents.learn.review_queue import ReviewQueue
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
    # activated, so kept: inactive, back in the review queue (see the test below)
    assert remaining["vocalist"].inactive_mark and remaining["performer"].inactive_mark
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


def test_a_changed_document_deactivates_what_was_activated_and_purges_candidates(
    concert,  # noqa: F811
    tmp_path,
):
    """What the new version no longer gives: an activated entry (reviewed, in use) is kept,
    inactive, with its history, back in the review queue; a candidate never activated goes.
    What the new version says instead of an activated fact is a new candidate, not a
    conflict with the kept one."""
    store, database = concert
    path = tmp_path / "handbook.md"
    path.write_text(HANDBOOK, encoding="utf-8")
    first = _extract(store, database, path, ScriptedLLM([scripted_reply(ANSWERS)]))
    by_name = {e.name: e for e in store.get_many(first.candidate_ids).values()}
    used = by_name["vocalist"]
    assert activate(store, [used.id, by_name["fill rate"].id], by="reviewer:rita")
    assert not store.get(used.id).inactive_mark
    changed = copy.deepcopy(ANSWERS)
    changed["Terms"]["terms"] = changed["Terms"]["terms"][1:]  # "vocalist" (and "performer")
    changed["Metrics"]["metrics"][0]["formula"] = "SUM(stadium.Average) / SUM(stadium.Capacity)"
    path.write_text(HANDBOOK.replace("a singer", "a singer or a band"), encoding="utf-8")
    second = _extract(store, database, path, ScriptedLLM([scripted_reply(changed)]))

    kept = store.get(used.id)
    assert kept.inactive_mark and kept.content_hash == used.content_hash
    note = mining_note(kept)
    assert note["status"] == ROLLED_BACK
    assert note["retracted"]["previous"]["status"] == "active"
    assert note["retracted"]["previous"]["by"] == "reviewer:rita"
    assert note["retracted"]["sha256"] == read_document(path).sha256
    assert note["job_id"] == first.job_id  # the history it had is kept
    assert used.id in second.retracted_ids
    waiting, _count = ReviewQueue(store).waiting(workspace=None)
    assert used.id in {item.entry.id for item in waiting}
    assert not store.exists(by_name["performer"].id)  # a candidate never activated: gone
    assert by_name["performer"].id in second.retracted_ids
    # the new formula of the activated metric (same id) is a candidate that notes what it
    # replaces, not a conflict with the old one
    old_rate = by_name["fill rate"]
    assert old_rate.id in second.candidate_ids, second.merge
    rate = store.get(old_rate.id)
    assert rate.inactive_mark and rate.content_resources["formula"].startswith("SUM(")
    replaced = mining_note(rate)["replaces"]
    assert replaced["content_hash"] == old_rate.content_hash
    assert replaced["previous"]["status"] == "active"
    assert replaced["content_resources"]["formula"].startswith("AVG(")
