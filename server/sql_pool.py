"""A bounded pool for the SQL users send: the corrected SQL of ``POST /v1/answers/{id}/feedback``.

Such a query may run until the target's time limit (``ALMANAC_TARGET_TIMEOUT_S``). Run on the
request handler threads, a handful of them starve every other route (16 feedbacks with a
recursive CTE made ``GET /v1/knowledge?limit=1`` take 19 s). :class:`SqlPool` runs them on
threads of its own, with a global and a per-key bound (``ALMANAC_LIMITS__SQL_CONCURRENCY``,
``..._SQL_QUEUE``, ``..._SQL_PER_KEY``); a request beyond either is refused at once with 429
and ``Retry-After``, and the handler awaits the result without holding a thread.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from fastapi import HTTPException

T = TypeVar("T")


class SqlPoolFullError(HTTPException):
    """The SQL pool (or the caller's share of it) is full: 429 with ``Retry-After``."""

    def __init__(self, detail: str, retry_after_s: int) -> None:
        super().__init__(429, detail, headers={"Retry-After": str(retry_after_s)})


class SqlPool:
    """Threads of their own for SQL a user sends (the corrected SQL of feedback).

    Such a query may run until the target's time limit; run on the request handler threads,
    a handful of them starve every other route. Here at most ``concurrency`` run at once,
    ``queue`` more wait (first come, first served), and one key has at most ``per_key``
    running or waiting; beyond either bound the request is refused at once with
    :class:`SqlPoolFullError` (429, ``Retry-After``). The caller awaits the result without
    holding a thread.

    Args:
        concurrency: queries running at once (threads of the pool).
        queue: queries waiting for a thread.
        per_key: queries one key may have running or waiting.
        retry_after_s: the ``Retry-After`` of a refusal.
    """

    def __init__(self, concurrency: int, queue: int, per_key: int, retry_after_s: int = 1) -> None:
        if concurrency < 1 or queue < 0 or per_key < 1:
            raise ValueError("SqlPool needs concurrency >= 1, queue >= 0 and per_key >= 1")
        self.concurrency, self.queue, self.per_key = concurrency, queue, per_key
        self.retry_after_s = retry_after_s
        self.admitted = self.rejected = 0
        self._by_key: dict[str, int] = {}
        self._lock = threading.Lock()
        self._executor = ThreadPoolExecutor(concurrency, thread_name_prefix="almanac-sql")

    @property
    def running(self) -> int:
        return min(self.admitted, self.concurrency)

    @property
    def waiting(self) -> int:
        return max(0, self.admitted - self.concurrency)

    async def run(self, key: str, work: Callable[[], T]) -> T:
        """``work()`` on a pool thread, on behalf of API key ``key``; 429 when full."""
        self._admit(key)
        try:
            future: Future[T] = self._executor.submit(work)
        except BaseException:
            self._release(key)
            raise
        # released when the work ends (or is cancelled before it started), not when the
        # awaiting request goes away: a query that still runs still counts
        future.add_done_callback(lambda _: self._release(key))
        return await asyncio.wrap_future(future)

    def close(self) -> None:
        """Drop the waiting queries; running ones finish on their own."""
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _admit(self, key: str) -> None:
        with self._lock:
            mine = self._by_key.get(key, 0)
            if mine >= self.per_key:
                self.rejected += 1
                raise SqlPoolFullError(
                    f"this key already has {mine} queries running or waiting "
                    f"(at most {self.per_key})",
                    self.retry_after_s,
                )
            if self.admitted >= self.concurrency + self.queue:
                self.rejected += 1
                raise SqlPoolFullError(
                    f"the SQL pool is full ({self.running} running, {self.waiting} waiting)",
                    self.retry_after_s,
                )
            self.admitted += 1
            self._by_key[key] = mine + 1

    def _release(self, key: str) -> None:
        with self._lock:
            self.admitted -= 1
            left = self._by_key[key] - 1
            if left:
                self._by_key[key] = left
            else:
                del self._by_key[key]
