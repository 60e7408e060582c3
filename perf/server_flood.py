"""``perf.server --flood N``: each scenario again while slow corrected SQL floods the server.

:func:`run_flooded` drives the scenario's measured run (the same requests) while
:func:`perf.sql_flood.flood` posts N concurrent feedbacks whose SQL runs until the target's
time limit, and counts the feedback stored and audited before and after;
:func:`report_flood` gives both runs, the p99 ratio (issue 20: within 3x) and whether a
feedback answered 200 was lost.
"""

from __future__ import annotations

import argparse
import asyncio
from dataclasses import dataclass
from pathlib import Path

from bench.perf.store import percentile
from perf.fixtures import stored_feedback
from perf.http_load import Measured, Scenario, drive, report_line, status_counts
from perf.sql_flood import FloodReport, flood
from server.settings import Settings
from server.state import open_keys


@dataclass
class Flooded:
    """One scenario run while the flood ran, and what the flood got."""

    measured: Measured
    flood: FloodReport
    stored: dict[str, int]  # labeled feedback experiences and feedback audit records written

    @property
    def lost(self) -> int:
        """Feedbacks answered 200 but not stored or not audited."""
        return self.flood.statuses.get(200, 0) - min(self.stored.values())

    @property
    def fivehundreds(self) -> int:
        return self.measured.errors.get(500, 0) + self.flood.statuses.get(500, 0)


async def _drive_flooded(
    scenario: Scenario,
    key: str,
    port: int,
    clients: int,
    requests: int,
    seed: int,
    flood_key: str,
    workers: int,
) -> tuple[Measured, FloodReport]:
    """:func:`perf.http_load.drive` while ``workers`` flood slow corrected SQL with
    ``flood_key``."""
    stop = asyncio.Event()
    flooding = asyncio.create_task(flood(f"http://127.0.0.1:{port}", flood_key, workers, stop))
    await asyncio.sleep(1.0)  # the flood is running before the load starts
    if flooding.done():
        await flooding  # it failed: raise its error
    try:
        measured = await drive(scenario, key, port, clients, requests, seed)
    finally:
        stop.set()
    return measured, await flooding


def run_flooded(
    scenario: Scenario,
    key: str,
    port: int,
    args: argparse.Namespace,
    flood_key: str,
    data_dir: Path,
    store_url: str,
) -> Flooded:
    """The scenario's measured run (same requests) again, with the flood beside it."""
    store, engine, _ = open_keys(Settings(data_dir=data_dir, store_url=store_url))
    try:
        before = stored_feedback(store, engine)
        measured, report = asyncio.run(
            _drive_flooded(
                scenario,
                key,
                port,
                args.clients,
                args.requests,
                args.seed + 1,
                flood_key,
                args.flood,
            )
        )
        after = stored_feedback(store, engine)
    finally:
        engine.dispose()
        store.close()
    return Flooded(measured, report, {k: after[k] - before[k] for k in after})


def report_flood(
    name: str, clients: int, workers: int, without: Measured, flooded: Flooded
) -> list[str]:
    """The lines a scenario adds with ``--flood``: both runs, the p99 ratio, the flood."""
    base_p99 = percentile(without.latencies, 0.99)
    flood_p99 = percentile(flooded.measured.latencies, 0.99)
    ratio = flood_p99 / base_p99 if base_p99 else float("inf")
    report = flooded.flood
    answered = report.seconds or [0.0]
    ok, lost = report.statuses.get(200, 0), flooded.lost
    return [
        report_line(name, clients, without, "without flood"),
        report_line(name, clients, flooded.measured, f"flood of {workers}"),
        f"{name:<14} p99 {base_p99 * 1000:.2f} ms without the flood, {flood_p99 * 1000:.2f} ms "
        f"with it: {ratio:.2f}x (issue 20: within 3x)",
        f"{name:<14} flood statuses {status_counts(report.statuses) or 'none'}; answered posts p50 "
        f"{percentile(answered, 0.5):.2f} s, max {max(answered):.2f} s; feedback answered 200 "
        f"{ok}, stored {flooded.stored['experiences']}, audited {flooded.stored['audit']}: "
        f"{'nothing lost' if lost == 0 else f'{lost} LOST'}",
    ]
