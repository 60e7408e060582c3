"""Builds every AutoFin table for one seed, in `schema.all_specs` order."""

from __future__ import annotations

import logging

import numpy as np
from tqdm import tqdm

from bench.autofin.amounts import simulate
from bench.autofin.catalog import BRANDS
from bench.autofin.consolidated import budget_table, pnl_table
from bench.autofin.dimensions import dimension_tables
from bench.autofin.income import income_table, ledger_table
from bench.autofin.schema import Table, all_specs
from bench.autofin.world import World, build_world

logger = logging.getLogger(__name__)


def build_tables(seed: int, *, progress: bool = True) -> tuple[World, list[Table]]:
    """The world and all tables (dimensions, per-brand income and ledger, P&L, budget)."""
    world = build_world(seed)
    series = simulate(world, seed)
    tables = dimension_tables(world)
    for index, brand in enumerate(tqdm(BRANDS, desc="brand tables", disable=not progress)):
        rng = np.random.default_rng([seed, 3, index])
        tables.append(income_table(world, brand, series[brand.code]))
        tables.append(ledger_table(world, brand, series[brand.code], rng))
    tables.append(pnl_table(world, series))
    tables.append(budget_table(world, series, seed))
    expected = [spec.name for spec in all_specs()]
    if [t.name for t in tables] != expected:
        raise AssertionError(f"tables out of order: {[t.name for t in tables]} != {expected}")
    logger.info("built %d tables, %d rows", len(tables), sum(t.row_count for t in tables))
    return world, tables
