"""Shared tables: ``profit_and_loss`` (actuals) and ``budget_and_forecast`` (plans).

Both are narrow: one row per currency, with a ``currency`` column. P&L rows aggregate the brand
income tables by region and report item (a month's ``ptd_amt`` equals the sum of the income rows'
``ptd_amt_<currency>``). Budgets and forecasts exist for caliber A only, by report-item level 1;
budgets are converted at the budget rate (the rate of the first month of the fiscal year),
forecasts at the month's rate.
"""

from __future__ import annotations

import numpy as np

from bench.autofin import calendar as cal
from bench.autofin.amounts import (
    BrandSeries,
    fiscal_cumsum,
    fiscal_year_start_rates,
    month_first,
    prior_year,
    spread,
    stored_periods,
    stored_slice,
)
from bench.autofin.catalog import (
    BRANDS,
    CALIBERS,
    LEVEL1,
    REGIONS,
    REPORT_ITEMS,
    REPORTING_CURRENCIES,
)
from bench.autofin.schema import BUDGET, PNL, Table
from bench.autofin.world import World

SCENARIOS = ("Budget", "Forecast")


def _region_matrix(world: World, brand: str) -> np.ndarray:
    """``[region, line]`` membership of a brand's sales lines."""
    codes = [r.code for r in REGIONS]
    matrix = np.zeros((len(codes), len(world.lines[brand])))
    for index, line in enumerate(world.lines[brand]):
        matrix[codes.index(line.region), index] = 1.0
    return matrix


def _level1_matrix() -> np.ndarray:
    """``[level 1, item]`` membership of the report items."""
    matrix = np.zeros((len(LEVEL1), len(REPORT_ITEMS)))
    for index, item in enumerate(REPORT_ITEMS):
        matrix[LEVEL1.index(item.level1), index] = 1.0
    return matrix


def _common_columns(periods: list[str], shape: tuple[int, ...], brand_axis: int) -> dict:
    return {
        "period": spread(periods, 0, shape),
        "fiscal_year": spread([cal.fiscal_year_label(p) for p in periods], 0, shape),
        "fiscal_quarter": spread([cal.quarter_label(p) for p in periods], 0, shape),
        "dept_code": spread([b.code for b in BRANDS], brand_axis, shape),
        "dept_name": spread([b.name for b in BRANDS], brand_axis, shape),
        "region_code": spread([r.code for r in REGIONS], brand_axis + 1, shape),
        "region_name": spread([r.name for r in REGIONS], brand_axis + 1, shape),
        "currency": spread(list(REPORTING_CURRENCIES), len(shape) - 1, shape),
    }


def pnl_table(world: World, series: dict[str, BrandSeries]) -> Table:
    """Rows ordered by period, caliber, brand, region, report item and currency."""
    periods, months = stored_periods(world), stored_slice(world)
    # [caliber, brand, region, item, currency, month]
    ptd = np.stack(
        [
            np.stack(
                [
                    np.einsum("rl,clit->crit", _region_matrix(world, b.code), series[b.code].ptd[c])
                    for c in (cur.lower() for cur in REPORTING_CURRENCIES)
                ],
                axis=3,
            )
            for b in BRANDS
        ],
        axis=1,
    ).round(2)
    shape = (len(periods), *ptd.shape[:-1])
    values = _common_columns(periods, shape, brand_axis=2)
    values["caliber"] = spread(list(CALIBERS), 1, shape)
    values["report_item_code"] = spread([i.code for i in REPORT_ITEMS], 4, shape)
    values["report_item_name"] = spread([i.name for i in REPORT_ITEMS], 4, shape)
    values["report_item_level1"] = spread([i.level1 for i in REPORT_ITEMS], 4, shape)
    ytd = fiscal_cumsum(ptd)
    values["ptd_amt"] = month_first(ptd, months)
    values["ptd_amt_py"] = month_first(prior_year(ptd), months)
    values["ytd_amt"] = month_first(ytd, months)
    values["ytd_amt_py"] = month_first(prior_year(ytd), months)
    return Table.from_mapping(PNL, values)


def budget_table(world: World, series: dict[str, BrandSeries], seed: int) -> Table:
    """Rows ordered by period, scenario, brand, region, level 1 and currency."""
    rng = np.random.default_rng([seed, 4])
    periods, months = stored_periods(world), stored_slice(world)
    level1 = _level1_matrix()
    # caliber-A actuals in USD: [brand, region, level1, month]
    actual = np.stack(
        [
            np.einsum("rl,ki,lit->rkt", _region_matrix(world, code), level1, series[code].usd[0])
            for code in (b.code for b in BRANDS)
        ]
    )
    fiscal_years = np.array([cal.fiscal_year(p) for p in world.periods])
    year_index = fiscal_years - fiscal_years.min()
    plan = rng.normal(1.05, 0.06, size=(*actual.shape[:2], 1, int(year_index.max()) + 1))
    budget_usd = actual * plan[..., year_index] * rng.lognormal(0, 0.05, size=actual.shape)
    forecast_usd = actual * rng.normal(1.0, 0.03, size=actual.shape)
    budget_rates = fiscal_year_start_rates(world)
    converted = []
    for amounts, rates in ((budget_usd, budget_rates), (forecast_usd, world.fx)):
        per_currency = [np.round(amounts * rates[c], 2) for c in REPORTING_CURRENCIES]
        converted.append(np.stack(per_currency, axis=3))  # [brand, region, level1, cur, month]
    ptd = np.stack(converted)  # [scenario, brand, region, level1, currency, month]
    shape = (len(periods), *ptd.shape[:-1])
    values = _common_columns(periods, shape, brand_axis=2)
    values["scenario"] = spread(list(SCENARIOS), 1, shape)
    values["report_item_level1"] = spread(list(LEVEL1), 4, shape)
    values["ptd_amt"] = month_first(ptd, months)
    values["ytd_amt"] = month_first(fiscal_cumsum(ptd), months)
    return Table.from_mapping(BUDGET, values)
