"""When to re-learn a model from a growing set: now, or once a least interval has passed.

The experience index learns its metric from the labeled experiences (about a second of CPU at
10k). A server that labels an experience with every feedback would refit without pause; a
:class:`RefitSchedule` runs a fit at once when the last one is older than ``interval_s`` and
otherwise defers it to a background timer, which refits then if it is still ``due()``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)


class RefitSchedule:
    """Runs ``fit`` at most once per ``interval_s`` (0: whenever asked).

    Args:
        fit: learns the model (the caller records its start with :meth:`fitting`).
        due: whether a fit is still needed when a deferred one comes up.
        interval_s: least time between the starts of two fits.
        name: the timer thread's name.
    """

    def __init__(
        self,
        fit: Callable[[], object],
        due: Callable[[], bool],
        interval_s: float = 0.0,
        *,
        name: str = "almanac-refit",
    ) -> None:
        if interval_s < 0:
            raise ValueError(f"refit interval must be >= 0 seconds, got {interval_s}")
        self._fit, self._due, self.interval_s, self.name = fit, due, interval_s, name
        self._last = float("-inf")  # time.monotonic() when the last fit started
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()

    def fitting(self) -> None:
        """A fit starts now (called by the fit itself, however it was started)."""
        self._last = time.monotonic()

    def request(self) -> None:
        """Fit now, or once ``interval_s`` has passed since the last fit started."""
        wait = self._last + self.interval_s - time.monotonic()
        if wait <= 0:
            self._fit()
            return
        with self._lock:
            if self._timer is None:
                self._timer = threading.Timer(wait, self._deferred)
                self._timer.daemon = True
                self._timer.name = self.name
                self._timer.start()

    @property
    def pending(self) -> bool:
        """A fit waits for its interval."""
        return self._timer is not None

    def close(self) -> None:
        """Cancel a deferred fit (its model is being replaced or the process stops)."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    def _deferred(self) -> None:
        with self._lock:
            if self._timer is None:  # closed meanwhile
                return
            self._timer = None
        try:
            if self._due():
                self._fit()
        except Exception:  # a background thread: log; the next request tries again
            log.exception("a deferred refit failed")
