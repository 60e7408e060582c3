"""Monthly amounts per brand: units and period-to-date amounts for every sales line and item.

Everything is simulated from `calendar.SIMULATION_START` (April 2018, the start of FY2019) so
that the stored years (2020-2025) have complete year-to-date and prior-year figures. Arrays are
indexed ``[caliber, line, report item, month]``; amounts are rounded to cents. The patterns of
`bench.autofin.plants` are applied here, to the demand and to each line's amounts.

Helpers `fiscal_cumsum` and `prior_year` turn period-to-date arrays into quarter-to-date,
year-to-date and prior-year arrays, so those columns are consistent by construction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bench.autofin import calendar as cal
from bench.autofin import plants
from bench.autofin.catalog import REPORT_ITEMS, REPORTING_CURRENCIES, country, model
from bench.autofin.world import SalesLine, World

ITEMS = [item.code for item in REPORT_ITEMS]
SEASON = np.array([0.86, 0.9, 1.16, 1.0, 1.0, 1.1, 0.9, 0.84, 1.12, 1.0, 1.0, 1.14])
DISRUPTION = {"202003": 0.8, "202004": 0.45, "202005": 0.6, "202006": 0.85}
ZEPHYR_EXTRA_GROWTH = 0.15


@dataclass(frozen=True)
class BrandSeries:
    """Simulated figures of one brand.

    Attributes:
        units: Vehicles sold, ``[line, month]``.
        usd: PTD amounts in USD, ``[caliber, line, item, month]``.
        ptd: PTD amounts per reporting currency (lower-case code) and ``"lc"`` (each line's
            local currency), each rounded to cents after conversion at the month's rate.
    """

    units: np.ndarray
    usd: np.ndarray
    ptd: dict[str, np.ndarray]


def fiscal_cumsum(values: np.ndarray, months_per_block: int = 12) -> np.ndarray:
    """Running sum along the last axis, restarting every fiscal year (or quarter: 3).

    The last axis must start at a fiscal-year start (April).
    """
    length = values.shape[-1]
    blocks = -(-length // months_per_block)
    padded = np.zeros((*values.shape[:-1], blocks * months_per_block), dtype=values.dtype)
    padded[..., :length] = values
    shaped = padded.reshape(*values.shape[:-1], blocks, months_per_block)
    summed = np.cumsum(shaped, axis=-1).reshape(padded.shape)[..., :length]
    return np.round(summed, 2) if values.dtype.kind == "f" else summed


def prior_year(values: np.ndarray) -> np.ndarray:
    """The value twelve months earlier (zero for the first simulated year)."""
    shifted = np.zeros_like(values)
    shifted[..., 12:] = values[..., :-12]
    return shifted


def simulate(world: World, seed: int) -> dict[str, BrandSeries]:
    """Series for every brand, each from its own random stream."""
    return {
        brand: _simulate_brand(world, lines, np.random.default_rng([seed, 2, index]))
        for index, (brand, lines) in enumerate(world.lines.items())
    }


def _simulate_brand(
    world: World, lines: tuple[SalesLine, ...], rng: np.random.Generator
) -> BrandSeries:
    months = len(world.periods)
    t = np.arange(months)
    calendar_month = np.array([int(p[4:]) for p in world.periods])
    shock = np.array([DISRUPTION.get(p, 1.0) for p in world.periods])
    growth = rng.normal(0.05, 0.04) + (ZEPHYR_EXTRA_GROWTH if lines[0].brand == "ZP" else 0.0)
    demand = SEASON[calendar_month - 1] * shock * (1 + growth) ** (t / 12)
    demand = plants.brand_demand(lines[0].brand, world.periods, demand)

    units = np.zeros((len(lines), months), dtype=np.int64)
    usd = np.zeros((2, len(lines), len(ITEMS), months))
    for index, line in enumerate(lines):
        units[index], amounts = _line_amounts(line, plants.line_demand(line, demand), t, rng)
        usd[:, index] = plants.adjust_amounts(line, amounts, ITEMS)
    if lines[0].brand == plants.MARGIN_DROP.brand:
        plants.plant_margin_drop(lines, world.periods, usd, ITEMS)
    usd = np.round(usd, 2)

    ptd: dict[str, np.ndarray] = {}
    for currency in REPORTING_CURRENCIES:
        ptd[currency.lower()] = np.round(usd * world.fx[currency], 2)
    local = np.stack([world.fx[country(line.country).currency] for line in lines])
    ptd["lc"] = np.round(usd * local[None, :, None, :], 2)
    return BrandSeries(units=units, usd=usd, ptd=ptd)


def _line_amounts(
    line: SalesLine, demand: np.ndarray, t: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Units ``[month]`` and amounts ``[caliber, item, month]`` of one sales line."""
    vehicle = model(line.model)
    months = len(t)
    kind = line.customer.kind
    scale = {"key_account": 6.0, "internal": 4.0}.get(kind, 1.0)
    base = 30.0 * (30_000 / vehicle.price_usd) ** 0.7 * rng.lognormal(0.0, 0.5) * scale
    trend = {"BEV": 1.12, "PHEV": 1.06, "HEV": 1.03}.get(vehicle.powertrain, 0.98) ** (t / 12)
    units = np.maximum(1, np.round(base * demand * trend * rng.lognormal(0, 0.12, months)))

    discount = rng.uniform(0.03, 0.12) + (0.05 if kind in ("fleet", "key_account") else 0.0)
    price = vehicle.price_usd * (1 - discount) * 1.02 ** (t / 12)
    rev_veh = units * price * rng.lognormal(0, 0.02, months)
    rev_svc = rev_veh * rng.uniform(0.08, 0.16) * rng.lognormal(0, 0.08, months)
    revenue = rev_veh + rev_svc
    central = 7.0 if line.region == "HQ" else 1.0  # central functions are booked at HQ
    items = np.stack(
        [
            rev_veh,
            rev_svc,
            rev_veh * rng.uniform(0.72, 0.86) * rng.lognormal(0, 0.03, months),
            rev_svc * rng.uniform(0.5, 0.65) * rng.lognormal(0, 0.05, months),
            revenue * rng.uniform(0.04, 0.08) * rng.lognormal(0, 0.1, months),
            revenue * rng.uniform(0.02, 0.04) * rng.lognormal(0, 0.1, months) * central,
            revenue * rng.uniform(0.03, 0.06) * rng.lognormal(0, 0.1, months) * central,
        ]
    )
    # Caliber B (statutory): intercompany revenue is eliminated, costs carry allocations.
    is_revenue = np.array([code.startswith("REV") for code in ITEMS])
    revenue_factor = 0.05 if kind == "internal" else rng.uniform(0.93, 0.99)
    factor = np.where(is_revenue, revenue_factor, rng.uniform(1.0, 1.06))
    caliber_b = items * factor[:, None] * rng.lognormal(0, 0.01, (len(ITEMS), months))
    return units.astype(np.int64), np.stack([items, caliber_b])


def stored_slice(world: World) -> slice:
    """The months that are written to the tables (`calendar.FIRST_PERIOD` onwards)."""
    return slice(world.first_stored(), len(world.periods))


def stored_periods(world: World) -> list[str]:
    return list(world.periods[stored_slice(world)])


def fiscal_year_start_rates(world: World) -> dict[str, np.ndarray]:
    """Budget rates: each month gets the rate of the first month of its fiscal year."""
    first = [world.periods.index(max(cal.SIMULATION_START, _fy_start(p))) for p in world.periods]
    return {currency: rates[first] for currency, rates in world.fx.items()}


def _fy_start(period: str) -> str:
    return cal.shift(cal.fiscal_year_end(cal.fiscal_year(period)), -11)


def spread(values: list, axis: int, shape: tuple[int, ...]) -> list:
    """``values`` (one per index of ``axis``) repeated over a C-ordered grid of ``shape``."""
    array = np.empty(len(values), dtype=object)
    array[:] = values
    view = [1] * len(shape)
    view[axis] = len(values)
    return np.broadcast_to(array.reshape(view), shape).ravel().tolist()


def month_first(values: np.ndarray, months: slice) -> list:
    """Stored months of a ``[..., month]`` array, month-major and flattened to a list."""
    return np.moveaxis(values[..., months], -1, 0).ravel().tolist()
