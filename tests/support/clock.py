"""A clock moved forward, for tests of expiry: no sleeping through a short window that a
loaded machine (the CI's two cores under the whole suite) can overrun before the first use."""

from __future__ import annotations

from datetime import datetime, timedelta, tzinfo

import pytest


def clock_moved_on(by: timedelta) -> type[datetime]:
    """A ``datetime`` whose ``now`` is ``by`` later than the real one; patch it over a module's
    ``datetime`` (``monkeypatch.setattr("server.keys.datetime", ...)``)."""

    class Later(datetime):
        @classmethod
        def now(cls, tz: tzinfo | None = None) -> datetime:  # type: ignore[override]
            return datetime.now(tz) + by

    return Later


def move_key_clock_on(monkeypatch: pytest.MonkeyPatch, by: timedelta) -> None:
    """Move the clock of the API keys' modules (:mod:`server.keys`, :mod:`server.auth`: the
    key table's expiry and the authenticator's cache) ``by`` later, for the rest of the test."""
    later = clock_moved_on(by)
    monkeypatch.setattr("server.auth.datetime", later)
    monkeypatch.setattr("server.keys.datetime", later)
