"""A flood of slow user-sent SQL, and a probe timing a fast route meanwhile.

Used by ``python -m perf.server_ask --flood N`` and ``python -m perf.server --flood N`` (issue
20: sixteen feedbacks whose corrected SQL ran until the target's limit made another user's
``GET /v1/knowledge?limit=1`` take 19 s):

- :func:`flood`: ``workers`` concurrent feedback posts on one answer of the flooding key,
  each with a recursive CTE that runs until the target's time limit, again and again until
  told to stop. A refusal (429) is retried after its ``Retry-After``, as a well-behaved client
  does; a client that ignores it is throttled by the per-key rate limit instead, which the
  benchmark lifts for every key so as not to measure that.
- :func:`probe`: ``GET /v1/knowledge?limit=1`` at a steady pace, each latency recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field

import httpx

RUNAWAY = "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM r) SELECT count(*) FROM r"
PROBE_EVERY_S = 0.02


@dataclass
class FloodReport:
    statuses: dict[int, int] = field(default_factory=dict)
    seconds: list[float] = field(default_factory=list)  # per answered post, 429s excluded


@dataclass
class ProbeReport:
    latencies: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)


async def flood(base: str, key: str, workers: int, stop: asyncio.Event) -> FloodReport:
    """Post slow corrected SQL from ``workers`` tasks until ``stop`` is set."""
    report = FloodReport()
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=300) as session:
        asked = await session.post("/v1/ask", json={"question": "North sales total, flood"})
        asked.raise_for_status()
        path = f"/v1/answers/{asked.json()['id']}/feedback"
        body = {"verdict": "wrong", "corrected_sql": RUNAWAY, "comment": "flood"}

        async def worker() -> None:
            while not stop.is_set():
                started = time.perf_counter()
                reply = await session.post(path, json=body)
                status = reply.status_code
                report.statuses[status] = report.statuses.get(status, 0) + 1
                if status == 429:
                    wait = float(reply.headers.get("retry-after", "1"))
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), timeout=wait)
                else:
                    report.seconds.append(time.perf_counter() - started)

        await asyncio.gather(*(worker() for _ in range(workers)))
    return report


async def probe(base: str, key: str, stop: asyncio.Event) -> ProbeReport:
    """Time ``GET /v1/knowledge?limit=1`` every :data:`PROBE_EVERY_S` until ``stop``."""
    report = ProbeReport()
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=120) as session:
        while not stop.is_set():
            started = time.perf_counter()
            reply = await session.get("/v1/knowledge", params={"limit": 1})
            report.latencies.append(time.perf_counter() - started)
            report.statuses[reply.status_code] = report.statuses.get(reply.status_code, 0) + 1
            await asyncio.sleep(PROBE_EVERY_S)
    return report
