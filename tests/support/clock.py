"""A clock moved forward, for tests of expiry: no sleeping through a short window that a
loaded machine (the CI's two cores under the whole suite) can overrun before the first use."""

from __future__ import annotations

from datetime import datetime, timedelta, tzinfo


def clock_moved_on(by: timedelta) -> type[datetime]:
    """A ``datetime`` whose ``now`` is ``by`` later than the real one; patch it over a module's
    ``datetime`` (``monkeypatch.setattr("server.keys.datetime", ...)``)."""

    class Later(datetime):
        @classmethod
        def now(cls, tz: tzinfo | None = None) -> datetime:  # type: ignore[override]
            return datetime.now(tz) + by

    return Later
