"""The seeded parts of AutoFin's world: customers, sales lines per brand, exchange rates.

A *sales line* is one (national area, customer, vehicle model, channel) a brand sells through;
each brand has `LINES_PER_BRAND` of them, three of which are booked at headquarters (global key
accounts and intercompany sales). Every income row, ledger invoice and P&L figure is derived
from these lines, so all tables agree with each other.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from bench.autofin import calendar as cal
from bench.autofin.catalog import (
    BRANDS,
    CHANNELS_BY_KIND,
    COUNTRIES,
    CUSTOMER_GROUPS,
    FLEET_COUNTRIES,
    FX_START,
    HQ,
    INTERNAL_CUSTOMERS,
    KEY_ACCOUNT_CUSTOMERS,
    PEGGED,
    PUBLIC_COUNTRIES,
    REGIONS,
    Country,
    customer_group,
    models_of,
)

LINES_PER_BRAND = 40
KIND_WEIGHTS = {"dealer": 55, "direct": 25, "fleet": 12, "public": 8}


@dataclass(frozen=True)
class Customer:
    code: str
    name: str
    group: str
    country: str
    area: str | None  # dealers sit in one national area; other customers span their country

    @property
    def kind(self) -> str:
        return customer_group(self.group).kind


@dataclass(frozen=True)
class SalesLine:
    brand: str
    area: str
    country: str
    region: str
    customer: Customer
    model: str
    channel: str

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.area, self.customer.code, self.model, self.channel)


@dataclass(frozen=True)
class World:
    customers: tuple[Customer, ...]
    lines: dict[str, tuple[SalesLine, ...]]  # brand code -> its sales lines
    periods: tuple[str, ...]  # simulated months, SIMULATION_START .. LAST_PERIOD
    fx: dict[str, np.ndarray]  # currency -> units per USD, one per simulated month

    def first_stored(self) -> int:
        """Index of `calendar.FIRST_PERIOD` in `periods`."""
        return self.periods.index(cal.FIRST_PERIOD)


def build_customers() -> tuple[Customer, ...]:
    """Every customer, in a fixed order with codes C0001, C0002, ..."""
    dealers = {region: g for g in CUSTOMER_GROUPS if g.kind == "dealer" for region in g.regions}
    specs: list[tuple[str, str, str, str | None]] = []
    for country in COUNTRIES:
        if country.code == HQ:
            for group, name in KEY_ACCOUNT_CUSTOMERS + INTERNAL_CUSTOMERS:
                specs.append((name, group, HQ, HQ))
            continue
        dealer = dealers[country.region]
        for area in country.areas:
            specs.append((f"{dealer.short} {area.city}", dealer.code, country.code, area.code))
        specs.append((f"Direct {country.name}", "CG_DIRECT", country.code, None))
        if country.code in FLEET_COUNTRIES:
            specs.append((f"FleetOne {country.name}", "CG_FLEETONE", country.code, None))
        if country.code in PUBLIC_COUNTRIES:
            specs.append((f"Public Sector {country.name}", "CG_PUBLIC", country.code, None))
    return tuple(
        Customer(f"C{number:04d}", name, group, country, area)
        for number, (name, group, country, area) in enumerate(specs, start=1)
    )


def build_world(seed: int) -> World:
    """Customers, sales lines and exchange rates for one seed."""
    customers = build_customers()
    rng = random.Random(f"autofin:{seed}:lines")
    lines = {brand.code: _brand_lines(rng, brand.code, customers) for brand in BRANDS}
    periods = tuple(cal.span(cal.SIMULATION_START, cal.LAST_PERIOD))
    fx = _exchange_rates(np.random.default_rng([seed, 1]), len(periods))
    return World(customers, lines, periods, fx)


def _brand_lines(
    rng: random.Random, brand: str, customers: tuple[Customer, ...]
) -> tuple[SalesLine, ...]:
    models = [m.code for m in models_of(brand)]
    by_country: dict[str, list[Customer]] = {}
    for customer in customers:
        by_country.setdefault(customer.country, []).append(customer)
    lines: list[SalesLine] = []
    seen: set[tuple[str, str, str, str]] = set()
    hq_models = rng.sample(models, 3)
    for customer, model in zip(by_country[HQ], hq_models, strict=True):
        channel = CHANNELS_BY_KIND[customer.kind][0]
        lines.append(SalesLine(brand, HQ, HQ, HQ, customer, model, channel))
    sales_regions = [r.code for r in REGIONS if r.code != HQ]
    countries = [c for c in COUNTRIES if c.code != HQ]
    while len(lines) < LINES_PER_BRAND:
        if len(lines) < 3 + len(sales_regions):  # one line in every sales region first
            region = sales_regions[len(lines) - 3]
            pool = [c for c in countries if c.region == region]
        else:
            pool = countries
        country = rng.choices(pool, weights=[c.weight for c in pool])[0]
        line = _draw_line(rng, brand, country, by_country[country.code], models)
        if line.key not in seen:
            seen.add(line.key)
            lines.append(line)
    return tuple(lines)


def _draw_line(
    rng: random.Random, brand: str, country: Country, customers: list[Customer], models: list[str]
) -> SalesLine:
    kinds = {c.kind for c in customers}
    choices = [kind for kind in KIND_WEIGHTS if kind in kinds]
    kind = rng.choices(choices, weights=[KIND_WEIGHTS[k] for k in choices])[0]
    customer = rng.choice([c for c in customers if c.kind == kind])
    area = customer.area or rng.choice(country.areas).code
    channel = rng.choice(CHANNELS_BY_KIND[kind])
    model = rng.choices(models, weights=[5, 4, 3, 2, 1])[0]
    return SalesLine(brand, area, country.code, country.region, customer, model, channel)


def _exchange_rates(rng: np.random.Generator, months: int) -> dict[str, np.ndarray]:
    """Monthly rates (units per USD): a log random walk per floating currency, 6 digits."""
    rates: dict[str, np.ndarray] = {}
    for currency, start in FX_START.items():
        steps = rng.normal(0.0, 0.018, size=months)
        steps[0] = 0.0
        walk = start * np.exp(np.cumsum(steps))
        if currency in PEGGED:
            walk = np.full(months, start)
        rates[currency] = np.array([float(f"{r:.6g}") for r in walk])
    return rates
