"""The review queue of learned knowledge on GeoQuery: candidates and blamed entries listed with
their provenance, approved (then retrieved), rejected (and not re-added by re-mining), edited,
and a mining job rolled back (then no longer retrieved)."""

from __future__ import annotations

import pytest

from agents.learn.credit import BlameThreshold, apply_verdict
from agents.learn.mine import mine_labeled
from agents.learn.review_queue import QueueFilter, ReviewQueue, ReviewQueueError, reasons
from indices.index_set import IndexSet
from tests.agents.learn.conftest import HOUSTON, NC, SPOT, labeled


def mine(store, db, *pairs, job_id="job-1", **fields):
    experiences = [labeled(q, sql, **fields) for q, sql in pairs]
    store.upsert_many(experiences)
    report = mine_labeled(store, experiences, job_id=job_id, targets={"geoquery": db})
    return experiences, report


def by_name(store, name):
    (entry,) = [e for e in store.iterate(source="auto", active=None) if e.name == name]
    return entry


def retrieved(store, question):
    return IndexSet.build(store, vectors=False, experiences=False).retriever().retrieve(question)


def found(store, question) -> list[str]:
    """Every entry the retrieval found, those the token budget dropped included."""
    evidence = retrieved(store, question)
    return evidence.ids() + [item.entry.id for item in evidence.dropped]


def test_the_queue_lists_candidates_with_their_source_experiences(geo):
    store, db = geo
    (_, spot, _), report = mine(store, db, NC, SPOT, HOUSTON)
    queue = ReviewQueue(store)

    items, total = queue.waiting(workspace=None)
    assert total == 3 and {i.entry.id for i in items} == set(report.candidate_ids)
    assert all(i.reasons == ["candidate"] for i in items)

    entry = by_name(store, "lowest spot")
    detail = queue.get(entry.id, workspace=None).to_dict(detail=True)
    (source,) = detail["sources"]
    assert source["id"] == spot.id and source["question"] == SPOT[0] and source["sql"] == SPOT[1]
    assert detail["job_id"] == "job-1" and detail["miner"] == "labeled"
    assert detail["trust"] == "labeled" and detail["how"] == "lexical"
    assert detail["database"] == "geoquery" and detail["reasons"] == ["candidate"]

    synonyms, _ = queue.waiting(workspace=None, flt=QueueFilter(types=["synonym"]))
    assert {i.entry.name for i in synonyms} == {"NC", "lowest spot"}
    assert queue.waiting(workspace=None, flt=QueueFilter(job_id="other"))[1] == 0
    assert queue.waiting(workspace=None, flt=QueueFilter(database="world_1"))[1] == 0
    assert queue.waiting(workspace=None, flt=QueueFilter(reason="blamed"))[1] == 0
    page, total = queue.waiting(workspace=None, limit=2, offset=2)
    assert len(page) == 1 and total == 3


def test_a_workspace_reviewer_sees_and_decides_only_their_workspace(geo):
    store, db = geo
    mine(store, db, NC, workspace="sales")
    mine(store, db, SPOT, job_id="job-2")
    queue = ReviewQueue(store)
    nc, spot = by_name(store, "NC"), by_name(store, "lowest spot")

    assert [i.entry.id for i in queue.waiting(workspace="sales")[0]] == [nc.id]
    with pytest.raises(ReviewQueueError) as refused:
        queue.approve(spot.id, "rita", workspace="sales")
    assert refused.value.status == 404
    assert store.get(spot.id).inactive_mark
    with pytest.raises(ReviewQueueError) as unknown:
        queue.rollback("job-2", "rita", workspace="sales")
    assert unknown.value.status == 404


def test_approving_makes_a_candidate_retrievable_and_takes_it_out_of_the_queue(geo):
    store, db = geo
    mine(store, db, NC)
    queue = ReviewQueue(store)
    nc = by_name(store, "NC")
    assert nc.id not in retrieved(store, NC[0]).ids()

    approved = queue.approve(nc.id, "rita", workspace=None)
    assert not approved.inactive_mark and approved.metadata["mining"]["status"] == "active"
    assert approved.metadata["mining"]["by"] == "rita"
    assert nc.id in retrieved(store, NC[0]).ids()
    assert queue.waiting(workspace=None)[1] == 0
    with pytest.raises(ReviewQueueError) as again:
        queue.approve(nc.id, "rita", workspace=None)
    assert again.value.status == 409
    with pytest.raises(ReviewQueueError) as missing:
        queue.get("0" * 32, workspace=None)
    assert missing.value.status == 404


def test_a_rejected_candidate_stays_rejected_when_the_log_is_mined_again(geo):
    store, db = geo
    experiences, _ = mine(store, db, HOUSTON)
    queue = ReviewQueue(store)
    houston = by_name(store, "houston")
    rejected = queue.reject(houston.id, "rita", workspace=None)
    assert rejected.inactive_mark and rejected.metadata["mining"]["status"] == "rejected"
    count = store.count(active=None)

    again = mine_labeled(store, experiences, job_id="job-2", targets={"geoquery": db})
    assert houston.id not in again.candidate_ids
    assert store.count(active=None) == count
    assert store.get(houston.id).metadata["mining"]["status"] == "rejected"
    assert queue.waiting(workspace=None)[1] == 0
    assert houston.id not in retrieved(store, HOUSTON[0]).ids()


def test_an_edit_changes_a_waiting_entry_keeps_its_id_and_records_who_changed_what(geo):
    store, db = geo
    mine(store, db, SPOT)
    queue = ReviewQueue(store)
    spot = by_name(store, "lowest spot")

    edited = queue.edit(spot.id, {"synonyms": ["lowest place"]}, "rita", workspace=None)
    assert edited.id == spot.id and store.get(spot.id).synonyms == ["lowest place"]
    (edit,) = store.get(spot.id).metadata["edits"]
    assert edit["by"] == "rita" and edit["fields"] == ["synonyms"]
    assert edit["old"] == {"synonyms": list(spot.synonyms)}
    assert reasons(store.get(spot.id)) == ["candidate"]  # still waits for approval
    for bad in ({"name": "x"}, {}, {"priority": "high"}, {"metadata": {}}):
        with pytest.raises(ReviewQueueError) as refused:
            queue.edit(spot.id, bad, "rita", workspace=None)
        assert refused.value.status == 422, bad

    queue.approve(spot.id, "rita", workspace=None)
    assert spot.id in found(store, "what is the lowest place in texas")


def test_rollback_takes_back_everything_a_job_activated_and_restores_the_answers(geo):
    store, db = geo
    mine(store, db, NC, SPOT, job_id="job-1")
    mine(store, db, HOUSTON, job_id="job-2")
    queue = ReviewQueue(store)
    nc, spot, houston = (by_name(store, n) for n in ("NC", "lowest spot", "houston"))
    before = retrieved(store, NC[0]).ids()
    indices = IndexSet.build(store, vectors=False, experiences=False)
    for entry in (nc, spot, houston):
        queue.approve(entry.id, "rita", workspace=None)
    indices.refresh(wait=True)
    assert nc.id in indices.retriever().retrieve(NC[0]).ids()

    assert sorted(queue.rollback("job-1", "olga", workspace=None)) == sorted([nc.id, spot.id])
    indices.refresh(wait=True)  # the index set follows the store's version
    after = indices.retriever().retrieve(NC[0]).ids()
    assert nc.id not in after and after == before
    assert store.get(nc.id).metadata["mining"]["status"] == "rolled_back"
    assert not store.get(houston.id).inactive_mark  # another job's entry stays
    assert {
        i.entry.id for i in queue.waiting(workspace=None, flt=QueueFilter(reason="rolled_back"))[0]
    } == {nc.id, spot.id}
    assert queue.rollback("job-1", "olga", workspace=None) == []  # nothing left to take back

    queue.approve(nc.id, "rita", workspace=None)  # a rolled-back entry can come back alone
    indices.refresh(wait=True)
    assert nc.id in indices.retriever().retrieve(NC[0]).ids()


def test_a_blamed_entry_is_listed_and_approving_it_keeps_its_counters(geo):
    store, db = geo
    mine(store, db, NC)
    queue = ReviewQueue(store)
    nc = queue.approve(by_name(store, "NC").id, "rita", workspace=None)
    threshold = BlameThreshold(min_blame=2)
    for _ in range(2):
        apply_verdict(store, [nc.id], "blame", threshold=threshold)
    assert store.get(nc.id).inactive_mark  # blame took it out of use

    (item,) = queue.waiting(workspace=None, flt=QueueFilter(reason="blamed"))[0]
    listed = item.to_dict()
    assert item.reasons == ["blamed"] and listed["review"]["blame"] == 2
    assert listed["feedback"]["blame"] == 2 and not listed["active"]
    approved = queue.approve(nc.id, "rita", workspace=None)
    assert not approved.inactive_mark and approved.metadata["feedback"]["blame"] == 2
    assert approved.metadata["review"]["status"] == "approved"
    assert approved.metadata["mining"]["status"] == "active"
    assert queue.waiting(workspace=None)[1] == 0
    assert nc.id in retrieved(store, NC[0]).ids()
    apply_verdict(store, [nc.id], "blame", threshold=threshold)  # approved: it stays in use
    assert not store.get(nc.id).inactive_mark and queue.waiting(workspace=None)[1] == 0


def test_a_flagged_schema_entry_waits_while_in_use_and_a_rejection_retires_it(geo):
    store, _db = geo
    (column,) = [
        e for e in store.iterate(type="column") if e.content_resources.get("table") == "highlow"
    ][:1]
    outcome = apply_verdict(store, [column.id], "blame", threshold=BlameThreshold(min_blame=1))
    assert outcome.flagged == [column.id]
    queue = ReviewQueue(store)

    (item,) = queue.waiting(workspace=None)[0]
    assert item.entry.id == column.id and item.reasons == ["blamed"]
    assert item.to_dict()["active"]
    rejected = queue.reject(column.id, "rita", workspace=None, reason="wrong column")
    assert rejected.inactive_mark and rejected.metadata["review"]["status"] == "rejected"
    assert rejected.metadata["review"]["comment"] == "wrong column"
    assert queue.waiting(workspace=None)[1] == 0
    with pytest.raises(ReviewQueueError) as again:
        queue.approve(column.id, "rita", workspace=None)
    assert again.value.status == 409


def test_a_gate_rejected_entry_waits_until_a_reviewer_overrules_or_confirms_the_gate(geo):
    from agents.learn.mine import reject

    store, db = geo
    mine(store, db, NC, SPOT)
    nc, spot = by_name(store, "NC"), by_name(store, "lowest spot")
    reject(store, [nc.id, spot.id], by="gate")  # as the regression gate rejects
    queue = ReviewQueue(store)
    items, total = queue.waiting(workspace=None, flt=QueueFilter(reason="gate_rejected"))
    assert total == 2 and {i.entry.id for i in items} == {nc.id, spot.id}
    assert all(reasons(i.entry) == ["gate_rejected"] for i in items)
    assert nc.id not in found(store, NC[0])

    approved = queue.approve(nc.id, "rita", workspace=None)  # the reviewer overrules the gate
    assert not approved.inactive_mark and approved.metadata["mining"]["by"] == "rita"
    assert nc.id in found(store, NC[0])
    confirmed = queue.reject(spot.id, "rita", workspace=None)
    assert confirmed.inactive_mark and confirmed.metadata["mining"]["status"] == "rejected"
    assert queue.waiting(workspace=None)[1] == 0
    with pytest.raises(ReviewQueueError, match="not in the review queue"):
        queue.approve(spot.id, "rita", workspace=None)  # a person's rejection is final here
