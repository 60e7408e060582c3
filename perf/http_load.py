"""A minimal HTTP/1.1 load generator for ``perf.server`` and its flood.

Each client is one asyncio task on a keep-alive connection, writing raw requests and reading
status lines, so the generator costs little CPU next to the server it measures.
:func:`drive` runs a :class:`Scenario` from N clients until M requests are answered and
returns their latencies and non-200 statuses (:class:`Measured`); :func:`report_line` prints
throughput and p50/p95/p99.
"""

from __future__ import annotations

import asyncio
import json
import random
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.perf.store import percentile


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Scenario:
    """One kind of request: its method and path, and a body maker (seeded per request)."""

    method: str
    path: str
    body: Callable[[random.Random], dict[str, Any]]


@dataclass
class Measured:
    latencies: list[float] = field(default_factory=list)
    errors: dict[int, int] = field(default_factory=dict)
    seconds: float = 0.0


def raw_request(method: str, path: str, body: dict[str, Any], key: str, port: int) -> bytes:
    payload = json.dumps(body).encode()
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\n\r\n"
    )
    return head.encode() + payload


async def exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: bytes) -> int:
    writer.write(raw)
    await writer.drain()
    status = int((await reader.readline()).split()[1])
    length = 0
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    await reader.readexactly(length)
    return status


async def drive(
    scenario: Scenario, key: str, port: int, clients: int, requests: int, seed: int
) -> Measured:
    measured = Measured()
    remaining = requests

    async def client(index: int) -> None:
        nonlocal remaining
        rng = random.Random(seed * 1000 + index)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            while remaining > 0:
                remaining -= 1
                raw = raw_request(scenario.method, scenario.path, scenario.body(rng), key, port)
                started = time.perf_counter()
                status = await exchange(reader, writer, raw)
                measured.latencies.append(time.perf_counter() - started)
                if status != 200:
                    measured.errors[status] = measured.errors.get(status, 0) + 1
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(client(i) for i in range(clients)))
    measured.seconds = time.perf_counter() - started
    return measured


def report_line(name: str, clients: int, measured: Measured, label: str = "") -> str:
    lat = measured.latencies
    rate = len(lat) / measured.seconds if measured.seconds else 0.0
    errors = status_counts(measured.errors) or "none"
    label = f"{label:<14} " if label else ""
    return (
        f"{name:<14} {clients:>3} clients  {label}{rate:8.1f} req/s  "
        f"p50 {percentile(lat, 0.5) * 1000:6.2f} ms  p95 {percentile(lat, 0.95) * 1000:6.2f} ms  "
        f"p99 {percentile(lat, 0.99) * 1000:6.2f} ms  (n={len(lat)}, errors: {errors})"
    )


def status_counts(statuses: dict[int, int]) -> str:
    return ", ".join(f"{code}×{n}" for code, n in sorted(statuses.items()))
