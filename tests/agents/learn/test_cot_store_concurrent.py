"""CoT profiling writing its records while another writer changes the same experiences: the
other writer's change (feedback counters, a new SQL) is never overwritten (store on SQLite
and PostgreSQL)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from agents.learn.cot import CotWriter, checked_cot, cot_record, profile_cot
from kb.store import KnowledgeStore
from tests.agents.learn.test_cot_profile import PAIRS, _experiences, teacher
from ukf import BaseUKF

FEEDBACK = {"credit": 3, "blame": 1}


class RacingStore:
    """``store``, where ``change`` runs (another writer) right after the first read of the
    experiences ``ids``: between the profiler's read and its write."""

    def __init__(self, store: KnowledgeStore, ids: set[str], change: Callable[[], None]):
        self._store, self._ids, self._change = store, ids, change
        self.reads = 0

    def get_many(self, ids: Iterable[str], **kwargs: Any) -> dict[str, BaseUKF]:
        wanted = list(ids)
        found = self._store.get_many(wanted, **kwargs)
        if self._ids & set(wanted):
            self.reads += 1
            if self.reads == 1:
                self._change()
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def _profile(store: Any, experiences: list) -> Any:
    writer = CotWriter(teacher())
    return profile_cot(store, experiences, writer, checkpoint=len(experiences))


def test_feedback_written_between_the_read_and_the_write_survives(store):
    experiences = _experiences()
    store.upsert_many(experiences)
    target = experiences[0]

    def feedback() -> None:  # another writer: counts a verdict on the same experience
        current = store.get(target.id)
        store.upsert(current.clone(metadata={**current.metadata, "feedback": FEEDBACK}))

    racing = RacingStore(store, {target.id}, feedback)
    report = _profile(racing, experiences)
    now = store.get(target.id)
    assert now.metadata.get("feedback") == FEEDBACK  # the other writer's change
    assert checked_cot(now)  # and the CoT
    assert racing.reads == 2  # read, found changed, read again
    assert report.written == len(PAIRS)
    assert all(checked_cot(e) for e in store.get_many(e.id for e in experiences).values())


def test_a_sql_changed_between_the_read_and_the_write_gets_no_cot(store):
    experiences = _experiences()
    store.upsert_many(experiences)
    target = experiences[1]
    fixed = "SELECT name FROM singer WHERE country = 'France' ORDER BY name"

    def correct() -> None:  # another writer: a reviewer corrects the SQL
        current = store.get(target.id)
        resources = {**current.content_resources, "sql": fixed}
        store.upsert(current.clone(content_resources=resources))

    report = _profile(RacingStore(store, {target.id}, correct), experiences)
    now = store.get(target.id)
    assert now.content_resources["sql"] == fixed and cot_record(now) is None
    assert report.written == len(PAIRS) - 1


def test_compare_and_set_writes_only_what_is_unchanged(store):
    first, second = _experiences()[:2]
    store.upsert_many([first, second])
    changed = second.clone(metadata={"feedback": FEEDBACK})
    store.upsert(changed)
    version = store.version
    mine = {e.id: (e, e.clone(profile={"mark": 1})) for e in (first, second)}
    written, conflicts = store.compare_and_set(mine)
    assert (written, conflicts) == ([first.id], [second.id])
    assert store.get(first.id).profile == {"mark": 1}
    assert store.get(second.id).metadata["feedback"] == FEEDBACK  # not overwritten
    assert store.version > version
    assert store.compare_and_set({}) == ([], [])


def test_compare_and_set_loses_no_update_between_threads(store):
    """Two writers in threads, each counting up its own field of the same entry by
    compare-and-set (read, retry on a conflict): neither loses a count."""
    entry = _experiences()[0]
    store.upsert(entry)
    rounds, errors = 15, []

    def count(field: str) -> None:
        try:
            for _ in range(rounds):
                while True:
                    read = store.get(entry.id)
                    profile = {**read.profile, field: read.profile.get(field, 0) + 1}
                    written, _conflicts = store.compare_and_set(
                        {entry.id: (read, read.clone(profile=profile))}
                    )
                    if written:
                        break
        except Exception as exc:  # reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=count, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors and not any(t.is_alive() for t in threads)
    assert store.get(entry.id).profile == {"a": rounds, "b": rounds}


def test_a_cot_written_while_an_entry_is_removed_survives(store, monkeypatch):
    """``remove`` (a read-change-write of the inactive mark) while the CoT is written on the
    same experience: the removal keeps the CoT. PostgreSQL only: on SQLite the remover holds
    the write lock from the start, so the other writer cannot come in between."""
    if store.url.startswith("sqlite"):
        pytest.skip("SQLite's BEGIN IMMEDIATE serialises the two writers from the start")
    entry = _experiences()[0]
    store.upsert(entry)
    remover, waiting, written = [], threading.Event(), threading.Event()
    bump = KnowledgeStore._bump_version

    def bump_after_the_cot(conn: Any) -> int:  # the remover waits here for the CoT writer
        if threading.get_ident() in remover:
            waiting.set()
            assert written.wait(30), "the CoT was never written"
        return bump(conn)

    monkeypatch.setattr(KnowledgeStore, "_bump_version", staticmethod(bump_after_the_cot))

    def remove() -> None:
        remover.append(threading.get_ident())
        store.remove(entry.id)

    thread = threading.Thread(target=remove)
    thread.start()
    assert waiting.wait(30), "the remover never wrote"  # in its transaction, waiting
    read = store.get(entry.id)
    assert store.compare_and_set({entry.id: (read, read.clone(profile={"cot": "kept"}))})[0]
    written.set()
    thread.join(30)
    assert not thread.is_alive()
    now = store.get(entry.id)
    assert now.inactive_mark and now.profile == {"cot": "kept"}
