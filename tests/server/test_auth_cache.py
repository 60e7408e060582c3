"""The key cache of :class:`server.auth.Authenticator` never outlives what the database said.

A replica trusts a checked key for ``cache_s``; these pin down the two edges of that promise
that the two-replica test (tests/server/test_replicas.py) cannot hit on purpose: a revocation
landing while a check is in flight, and a check whose database read was slow.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from types import SimpleNamespace

from server import auth as auth_module
from server.auth import Authenticator
from server.keys import ApiKey

SECRET = "alm_0123456789ab_" + "s" * 43
KEY = ApiKey(
    id="0123456789ab",
    role="analyst",
    user="ana",
    workspace=None,
    groups=(),
    label="",
    created_at=datetime(2026, 1, 1, tzinfo=UTC),
)


class GatedKeys:
    """A key table whose ``verify`` read happens, then waits until the test lets it answer."""

    def __init__(self) -> None:
        self.read, self.answer = threading.Event(), threading.Event()

    def verify(self, presented: str) -> ApiKey | None:
        self.read.set()  # the row was read: the key was still active
        assert self.answer.wait(10)
        return KEY if presented == SECRET else None

    def touch(self, key_id: str, when: datetime) -> None:
        pass


def test_a_revocation_during_a_check_is_not_undone_by_the_checks_cache_fill():
    keys = GatedKeys()
    authenticator = Authenticator(keys, cache_s=60)  # type: ignore[arg-type]
    answers: list[object] = []
    check = threading.Thread(target=lambda: answers.append(authenticator.identify(SECRET)))
    check.start()
    assert keys.read.wait(10)
    authenticator.forget(KEY.id)  # the key is revoked (and forgotten) while the check runs
    keys.answer.set()
    check.join(10)
    assert answers and answers[0] is not None  # that request was checked before the revocation
    assert authenticator.cached(SECRET) is None, "a revoked key stays trusted for cache_s"


class SlowKeys:
    """A key table whose read takes ``read_s`` on a fake clock."""

    def __init__(self, clock: list[float], read_s: float) -> None:
        self.clock, self.read_s = clock, read_s

    def verify(self, presented: str) -> ApiKey | None:
        self.clock[0] += self.read_s
        return KEY

    def touch(self, key_id: str, when: datetime) -> None:
        pass


def test_the_cache_counts_from_the_database_read_not_from_its_answer(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(auth_module, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    authenticator = Authenticator(SlowKeys(clock, read_s=3.0), cache_s=5)  # type: ignore[arg-type]
    assert authenticator.identify(SECRET) is not None
    assert authenticator.cached(SECRET) is not None
    clock[0] += 2.5  # 5.5 s after the read: a revocation right after it must be honoured by now
    assert authenticator.cached(SECRET) is None
