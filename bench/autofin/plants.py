"""The patterns AutoFin plants on purpose, so that analysis questions have a known answer.

Every parameter lives here; `amounts` and `income` call the hooks below while simulating, and
`planted` measures the result in the generated database afterwards. No hook draws a random
number, so planting leaves every random stream (and every unplanted figure) as it was.

1. :data:`MARGIN_DROP`: in one fiscal quarter, one region x model of one brand sells at a lower
   price and a higher vehicle cost, so the brand's gross margin drops and that segment drives it.
2. :data:`SEASONAL_PEAK`: one brand's demand jumps in one calendar month every year.
3. :data:`TREND`: one brand's lines in one region follow a steady growth curve (no season, no
   2020 disruption), so the next month is forecastable.
4. :data:`DEEP_DISCOUNT`: one brand's fleet and public-sector lines are invoiced at a deep
   discount band, sell no more (their volume grows slower) and earn a lower gross margin.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from bench.autofin import calendar as cal
from bench.autofin.catalog import HQ, models_of
from bench.autofin.world import SalesLine


@dataclass(frozen=True)
class MarginDrop:
    """Brand ``brand``'s lines of ``model`` in ``region`` during the fiscal quarter ending
    ``quarter_end``: vehicle revenue x ``price_factor``, vehicle cost x ``cost_factor``
    (units unchanged). ``model`` None: the model with the largest vehicle revenue in the
    region over the twelve months before the quarter."""

    brand: str = "AU"
    region: str = "EUR"
    quarter_end: str = "202409"  # FY2025 Q2: July to September 2024
    price_factor: float = 0.82
    cost_factor: float = 1.12
    model: str | None = None

    @property
    def periods(self) -> list[str]:
        return cal.quarter_periods(self.quarter_end)

    @property
    def previous_periods(self) -> list[str]:
        return cal.quarter_periods(cal.shift(self.quarter_end, -3))


@dataclass(frozen=True)
class SeasonalPeak:
    """Brand ``brand``'s demand x ``factor`` in calendar month ``month`` of every year."""

    brand: str = "HX"
    month: int = 11
    factor: float = 1.5


@dataclass(frozen=True)
class Trend:
    """Brand ``brand``'s lines in ``region`` follow ``level * exp(monthly_log_growth * (t -
    t_last))`` instead of the brand's seasonal demand; ``level`` is the brand's mean demand
    over the last twelve simulated months, so the series ends where the brand's does."""

    brand: str = "ZP"
    region: str = "EUR"
    monthly_log_growth: float = 0.02  # about 27 % a year
    history_from: str = "202101"  # the months a forecast is fitted on (through the last one)
    level: float = 0.95  # the interval's coverage


@dataclass(frozen=True)
class DeepDiscount:
    """Brand ``brand``'s non-HQ lines of customer kinds ``kinds`` get invoice discounts in
    [``low``, ``high``) (others stay in 2-12 %), vehicle revenue x ``price_factor`` with the
    cost unchanged, and demand x ``yearly_drag`` per year (no volume gain)."""

    brand: str = "TI"
    kinds: tuple[str, ...] = ("fleet", "public")
    low: float = 0.15
    high: float = 0.20
    price_factor: float = 0.9
    yearly_drag: float = 0.9

    @property
    def band(self) -> str:
        return f"{self.low * 100:g}-{self.high * 100:g}%"


MARGIN_DROP = MarginDrop()
SEASONAL_PEAK = SeasonalPeak()
TREND = Trend()
DEEP_DISCOUNT = DeepDiscount()
# Discount bands of the sales ledger (rate = discount / gross sales), lower bound inclusive.
DISCOUNT_BANDS: tuple[tuple[float, float, str], ...] = (
    (0.0, 0.05, "0-5%"),
    (0.05, 0.10, "5-10%"),
    (0.10, 0.15, "10-15%"),
    (DEEP_DISCOUNT.low, DEEP_DISCOUNT.high, DEEP_DISCOUNT.band),
)
LEDGER_DISCOUNT = (0.02, 0.12)  # the unplanted invoice discount range (income.ledger_table)


def margin_drop_model(
    lines: tuple[SalesLine, ...], periods: tuple[str, ...], usd: np.ndarray, items: list[str]
) -> str:
    """The model the margin drop hits: ``MARGIN_DROP.model``, or the model with the largest
    caliber-A vehicle revenue in the region over the twelve months before the quarter
    (``usd``: ``[caliber, line, item, month]``; catalog order breaks ties)."""
    plant = MARGIN_DROP
    if plant.model:
        return plant.model
    first = periods.index(plant.periods[0])
    revenue: Counter[str] = Counter()
    for index, line in enumerate(lines):
        if line.region == plant.region:
            revenue[line.model] += float(
                usd[0, index, items.index("REV_VEH"), first - 12 : first].sum()
            )
    if not revenue:
        raise ValueError(f"brand {plant.brand} has no sales line in region {plant.region}")
    order = [m.code for m in models_of(plant.brand)]
    return max(revenue, key=lambda code: (revenue[code], -order.index(code)))


def plant_margin_drop(
    lines: tuple[SalesLine, ...], periods: tuple[str, ...], usd: np.ndarray, items: list[str]
) -> str:
    """Applies the margin drop to the brand's amounts ``usd`` in place; the model it hit."""
    plant = MARGIN_DROP
    hit_model = margin_drop_model(lines, periods, usd, items)
    months = np.isin(np.array(periods), plant.periods)
    vehicle, cost = items.index("REV_VEH"), items.index("COGS_VEH")
    for index, line in enumerate(lines):
        if line.region == plant.region and line.model == hit_model:
            usd[:, index, vehicle, months] *= plant.price_factor
            usd[:, index, cost, months] *= plant.cost_factor
    return hit_model


def is_deep_discount(line: SalesLine, plant: DeepDiscount = DEEP_DISCOUNT) -> bool:
    return line.brand == plant.brand and line.region != HQ and line.customer.kind in plant.kinds


def brand_demand(brand: str, periods: tuple[str, ...], demand: np.ndarray) -> np.ndarray:
    """A brand's monthly demand with the seasonal peak planted."""
    if brand != SEASONAL_PEAK.brand:
        return demand
    month = np.array([int(p[4:]) for p in periods])
    return demand * np.where(month == SEASONAL_PEAK.month, SEASONAL_PEAK.factor, 1.0)


def line_demand(line: SalesLine, demand: np.ndarray) -> np.ndarray:
    """One line's demand: the trend curve, the deep-discount drag, or the brand's."""
    t = np.arange(len(demand))
    if line.brand == TREND.brand and line.region == TREND.region:
        level = float(demand[-12:].mean())
        return level * np.exp(TREND.monthly_log_growth * (t - t[-1]))
    if is_deep_discount(line):
        return demand * DEEP_DISCOUNT.yearly_drag ** (t / 12)
    return demand


def adjust_amounts(line: SalesLine, amounts: np.ndarray, items: list[str]) -> np.ndarray:
    """One line's ``amounts`` (``[caliber, item, month]``, USD) at the deep discount's price."""
    if not is_deep_discount(line):
        return amounts
    amounts = amounts.copy()
    amounts[:, items.index("REV_VEH")] *= DEEP_DISCOUNT.price_factor
    return amounts


def invoice_discount(line: SalesLine, drawn: float) -> float:
    """An invoice's discount rate: ``drawn`` (uniform in `LEDGER_DISCOUNT`) as it is, or
    mapped linearly onto the deep band for a deep-discount line."""
    if not is_deep_discount(line):
        return drawn
    low, high = LEDGER_DISCOUNT
    share = (drawn - low) / (high - low)
    margin = 0.001  # keeps rounded rates inside the band
    width = DEEP_DISCOUNT.high - DEEP_DISCOUNT.low - 2 * margin
    return DEEP_DISCOUNT.low + margin + share * width
