"""Per-brand tables: the wide ``income_<brand>`` table and the ``sales_ledger_<brand>`` invoices.

Income rows are ordered by period, caliber, sales line and report item. The ledger splits each
sales line's monthly vehicle revenue (caliber A, USD) and units into one to four invoices, so
``SUM(net_sales_usd)`` of a month equals the income table's ``REV_VEH`` caliber-A ``ptd_amt_usd``
up to cent rounding.
"""

from __future__ import annotations

import numpy as np

from bench.autofin import calendar as cal
from bench.autofin import plants
from bench.autofin.amounts import (
    ITEMS,
    BrandSeries,
    fiscal_cumsum,
    month_first,
    prior_year,
    spread,
    stored_periods,
    stored_slice,
)
from bench.autofin.catalog import (
    CALIBERS,
    REPORT_ITEMS,
    REPORTING_CURRENCIES,
    Brand,
    area_index,
    country,
    customer_group,
    model,
    region,
)
from bench.autofin.schema import (
    Table,
    amount_column,
    income_spec,
    ledger_spec,
)
from bench.autofin.world import SalesLine, World

PAYMENT_TERMS = {
    "dealer": "NET30",
    "fleet": "NET60",
    "public": "NET60",
    "direct": "PREPAID",
    "key_account": "NET90",
    "internal": "NET45",
}


def line_attributes(line: SalesLine) -> dict[str, str]:
    """The descriptive columns a sales line contributes to a row."""
    place, area = area_index()[line.area]
    group = customer_group(line.customer.group)
    vehicle = model(line.model)
    return {
        "region_code": line.region,
        "region_name": region(line.region).name,
        "country_code": place.code,
        "country_name": place.name,
        "area_code": area.code,
        "area_name": area.name,
        "customer_group_code": group.code,
        "customer_group_name": group.name,
        "customer_code": line.customer.code,
        "customer_name": line.customer.name,
        "channel": line.channel,
        "model_code": vehicle.code,
        "model_name": vehicle.name,
        "segment": vehicle.segment,
        "powertrain": vehicle.powertrain,
    }


def income_table(world: World, brand: Brand, series: BrandSeries) -> Table:
    """One row per (period, caliber, sales line, report item): 72 x 2 x 40 x 7 = 40,320 rows."""
    lines = world.lines[brand.code]
    periods, months = stored_periods(world), stored_slice(world)
    shape = (len(periods), len(CALIBERS), len(lines), len(ITEMS))
    values: dict[str, list] = {
        "period": spread(periods, 0, shape),
        "fiscal_year": spread([cal.fiscal_year_label(p) for p in periods], 0, shape),
        "fiscal_quarter": spread([cal.quarter_label(p) for p in periods], 0, shape),
        "fiscal_month": spread([cal.fiscal_month(p) for p in periods], 0, shape),
        "caliber": spread(list(CALIBERS), 1, shape),
        "data_source": spread(["ERP", "CONSOL"], 1, shape),
        "dept_code": [brand.code] * int(np.prod(shape)),
        "dept_name": [brand.name] * int(np.prod(shape)),
    }
    attributes = [line_attributes(line) for line in lines]
    for name in attributes[0]:
        values[name] = spread([a[name] for a in attributes], 2, shape)
    entity = [f"{brand.code}-{line.country}" for line in lines]
    values["entity_code"] = spread(entity, 2, shape)
    names = [f"{brand.name} {country(line.country).name}" for line in lines]
    values["entity_name"] = spread(names, 2, shape)
    values["profit_center"] = spread([f"PC-{brand.code}-{line.region}" for line in lines], 2, shape)
    internal = [int(line.customer.kind == "internal") for line in lines]
    values["is_intercompany"] = spread(internal, 2, shape)
    local = [country(line.country).currency for line in lines]
    values["local_currency"] = spread(local, 2, shape)
    values["report_item_code"] = spread([i.code for i in REPORT_ITEMS], 3, shape)
    values["report_item_name"] = spread([i.name for i in REPORT_ITEMS], 3, shape)
    values["report_item_level1"] = spread([i.level1 for i in REPORT_ITEMS], 3, shape)

    for currency in [*REPORTING_CURRENCIES, "lc"]:
        ptd = series.ptd[currency.lower()]
        kinds = {"ptd": ptd, "ytd": fiscal_cumsum(ptd)}
        if currency != "lc":
            kinds["qtd"] = fiscal_cumsum(ptd, 3)
        for kind, amounts in kinds.items():
            values[amount_column(kind, currency)] = month_first(amounts, months)
            py = amount_column(kind, currency, prior_year=True)
            values[py] = month_first(prior_year(amounts), months)

    quantity = np.zeros(series.usd.shape, dtype=np.int64)
    quantity[:, :, ITEMS.index("REV_VEH"), :] = series.units[None, :, :]
    for kind, counts in (
        ("ptd", quantity),
        ("qtd", fiscal_cumsum(quantity, 3)),
        ("ytd", fiscal_cumsum(quantity)),
    ):
        values[f"{kind}_qty"] = month_first(counts, months)
        values[f"{kind}_qty_py"] = month_first(prior_year(counts), months)
    return Table.from_mapping(income_spec(brand.income_table), values)


def ledger_table(
    world: World, brand: Brand, series: BrandSeries, rng: np.random.Generator
) -> Table:
    """Invoices of one brand, ordered by period and invoice number."""
    lines = world.lines[brand.code]
    attributes = [line_attributes(line) for line in lines]
    spec = ledger_spec(brand.ledger_table)
    rows: list[tuple] = []
    for month in range(stored_slice(world).start, len(world.periods)):
        period = world.periods[month]
        invoices = []
        for index in range(len(lines)):
            units = int(series.units[index, month])
            net = float(series.usd[0, index, ITEMS.index("REV_VEH"), month])
            invoices += _split_invoices(rng, index, units, net)
        invoices.sort()
        for number, (day, index, _, units, net_usd, drawn) in enumerate(invoices, 1):
            line = lines[index]
            discount_rate = round(plants.invoice_discount(line, drawn), 4)
            rate = {c: float(world.fx[c][month]) for c in REPORTING_CURRENCIES}
            local = country(line.country).currency
            gross_usd = round(net_usd / (1 - discount_rate), 2)
            gross = [round(gross_usd * rate[c], 2) for c in REPORTING_CURRENCIES]
            net = [round(net_usd * rate[c], 2) for c in REPORTING_CURRENCIES]
            values = {
                "invoice_no": f"{brand.code}{period}-{number:04d}",
                "invoice_date": f"{period[:4]}-{period[4:]}-{day:02d}",
                "period": period,
                "fiscal_year": cal.fiscal_year_label(period),
                "fiscal_quarter": cal.quarter_label(period),
                "dept_code": brand.code,
                **attributes[index],
                "units": units,
                "list_price_usd": round(model(line.model).price_usd * 1.02 ** (month / 12), 2),
                "local_currency": local,
                "net_sales_lc": round(net_usd * float(world.fx[local][month]), 2),
                "payment_terms": PAYMENT_TERMS[line.customer.kind],
                "is_intercompany": int(line.customer.kind == "internal"),
            }
            for position, currency in enumerate(REPORTING_CURRENCIES):
                code = currency.lower()
                values[f"gross_sales_{code}"] = gross[position]
                values[f"net_sales_{code}"] = net[position]
                values[f"discount_{code}"] = round(gross[position] - net[position], 2)
            rows.append(tuple(values[name] for name in spec.column_names))
    return Table.from_rows(spec, rows)


def _split_invoices(
    rng: np.random.Generator, index: int, units: int, net: float
) -> list[tuple[int, int, int, int, float, float]]:
    """(day, line, k, units, net USD, discount rate) of one line's invoices in a month."""
    count = int(min(units, rng.integers(1, 5)))
    shares = rng.multinomial(units - count, [1 / count] * count) + 1
    days = rng.integers(1, 29, size=count)
    discounts = rng.uniform(0.02, 0.12, size=count)
    amounts = [round(net * int(u) / units, 2) for u in shares[:-1]]
    amounts.append(round(net - sum(amounts), 2))
    return [
        (int(days[k]), index, k, int(shares[k]), amounts[k], round(float(discounts[k]), 4))
        for k in range(count)
    ]
