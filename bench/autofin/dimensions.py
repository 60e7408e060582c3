"""Dimension tables: departments, regions, customers, vehicle models, report items, FX, calendar.

Nicknames and aliases are deliberately absent: they are private knowledge and live only in the
knowledge pack.
"""

from __future__ import annotations

from bench.autofin import calendar as cal
from bench.autofin.amounts import fiscal_year_start_rates, stored_slice
from bench.autofin.catalog import (
    BRANDS,
    COUNTRIES,
    FX_START,
    MODELS,
    REPORT_ITEMS,
    customer_group,
    region,
)
from bench.autofin.schema import DIMENSIONS, Table
from bench.autofin.world import World


def dimension_tables(world: World) -> list[Table]:
    """Every dimension table, in `schema.DIMENSIONS` order."""
    months = stored_slice(world)
    periods = list(world.periods[months])
    budget_rates = fiscal_year_start_rates(world)
    rows = {
        "departments": [(b.code, b.name, b.focus, b.income_table, b.ledger_table) for b in BRANDS],
        "regions": [
            (
                area.code,
                area.name,
                area.city,
                c.code,
                c.name,
                c.currency,
                c.region,
                region(c.region).name,
                region(c.region).currency,
            )
            for c in COUNTRIES
            for area in c.areas
        ],
        "customers": [
            (
                cu.code,
                cu.name,
                cu.group,
                customer_group(cu.group).name,
                cu.kind,
                cu.country,
                cu.area,
            )
            for cu in world.customers
        ],
        "vehicle_models": [
            (m.code, m.name, m.brand, m.segment, m.powertrain, float(m.price_usd)) for m in MODELS
        ],
        "report_items": [(i.code, i.name, i.level1, i.order) for i in REPORT_ITEMS],
        "fx_rates": [
            (
                period,
                currency,
                float(world.fx[currency][months.start + k]),
                float(budget_rates[currency][months.start + k]),
            )
            for k, period in enumerate(periods)
            for currency in FX_START
        ],
        "fiscal_calendar": [
            (
                p,
                cal.fiscal_year_label(p),
                cal.quarter_label(p),
                int(p[:4]),
                int(p[4:]),
                cal.fiscal_month(p),
            )
            for p in periods
        ],
    }
    return [Table.from_rows(spec, rows[spec.name]) for spec in DIMENSIONS]
