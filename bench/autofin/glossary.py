"""AutoFin's business vocabulary as data: glossary terms, metric formulas, rules and predicates.

`bench.autofin.knowledge` turns these into UKF entries and Markdown documents; the question
generator cites them by name (``metadata.knowledge`` of each question), so every piece of
knowledge a gold query encodes can be found in the pack.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from bench.autofin.plants import DISCOUNT_BANDS


@dataclass(frozen=True)
class Term:
    name: str
    expansion: str
    definition: str
    synonyms: tuple[str, ...] = ()


@dataclass(frozen=True)
class Metric:
    name: str
    formula: str
    description: str
    kind: str = "metric"
    unit: str | None = None
    synonyms: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()

    @property
    def rows_filter(self) -> dict[str, Any] | None:
        """The default filter of a metric that is one report item's rows (revenue:
        ``report_item_level1 = 'Revenue'``), for the chain to add to a query that names
        no report item (:mod:`agents.sql.default_filters`); None for any other formula."""
        found = _ONE_ITEM.fullmatch(self.formula)
        if found is None:
            return None
        return {
            "column": "report_item_level1",
            "value": found.group(1),
            "unless": ["report_item_code", "report_item_name"],
        }


_ONE_ITEM = re.compile(r"SUM\(<amount>\) WHERE report_item_level1 = '([^']+)'")


@dataclass(frozen=True)
class Rule:
    name: str
    content: str
    kind: str
    triggers: dict[str, dict[str, Any]] = field(default_factory=dict)
    synonyms: tuple[str, ...] = ()
    resources: dict[str, Any] = field(default_factory=dict)  # machine-readable facts


@dataclass(frozen=True)
class Predicate:
    name: str
    condition: str
    description: str
    synonyms: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()


def _discount_band_case() -> str:
    """The sales ledger's discount bands (:data:`bench.autofin.plants.DISCOUNT_BANDS`) as a
    CASE expression over one invoice's columns."""
    cases = " ".join(
        f"WHEN discount_<cur> / gross_sales_<cur> < {high:g} THEN '{name}'"
        for _, high, name in DISCOUNT_BANDS
    )
    return f"CASE {cases} END"  # no band (NULL) past the deepest or without gross sales


# fmt: off
TERMS = (
    Term("PTD", "period-to-date", "The amount of one reporting month (period). Columns ptd_amt_*.",
         ("period to date", "monthly amount")),
    Term("QTD", "quarter-to-date", "Running total from the first month of the fiscal quarter to "
         "the period. Columns qtd_amt_*.", ("quarter to date",)),
    Term("YTD", "year-to-date", "Running total from April (start of the fiscal year) to the "
         "period. Columns ytd_amt_*. The YTD of March is the full fiscal year.",
         ("year to date", "so far this year")),
    Term("PY", "prior year", "The same period one year earlier; columns with _py hold it, e.g. "
         "ptd_amt_py_usd is last year's ptd_amt_usd of the same month and key.",
         ("prior-year", "same period last year", "last year's figure")),
    Term("FY", "fiscal year", "April to March, named after the year it ends in: FY2025 = April "
         "2024 to March 2025.", ("fiscal year", "financial year")),
    Term("YoY", "year over year", "Change against the same period of the prior year.",
         ("year-over-year", "year on year", "vs last year")),
    Term("MoM", "month over month", "Change against the previous month.",
         ("month-over-month", "month on month", "vs last month")),
    Term("COGS", "cost of goods sold", "Report items with report_item_level1 = 'Cost of sales' "
         "(COGS_VEH and COGS_SVC).", ("cost of sales", "cost of goods sold")),
    Term("GP", "gross profit", "Revenue minus cost of sales.", ("gross profit",)),
    Term("GM", "gross margin", "Gross profit divided by revenue.", ("gross margin", "GM%")),
    Term("OPEX", "operating expenses", "Selling, administrative and R&D expenses "
         "(report_item_level1 = 'Operating expenses').", ("operating expenses", "opex")),
    Term("SG&A", "selling, general and administrative expenses", "SELL_EXP plus ADMIN_EXP.",
         ("SGA", "selling and admin expenses")),
    Term("R&D", "research and development", "Report item RND_EXP.",
         ("research and development", "R and D")),
    Term("BCR", "budget completion rate", "Actual divided by budget for the same scope and "
         "period.", ("budget completion rate", "budget attainment", "budget achievement")),
    Term("ASP", "average selling price", "Vehicle sales revenue (REV_VEH) divided by units sold.",
         ("average selling price", "average price")),
    Term("NEV", "new energy vehicles", "Battery-electric (BEV) and plug-in hybrid (PHEV) models.",
         ("new energy vehicles", "electrified models")),
    Term("BEV", "battery electric vehicle", "Powertrain 'BEV'.", ("EV", "electric car")),
    Term("PHEV", "plug-in hybrid electric vehicle", "Powertrain 'PHEV'.", ("plug-in hybrid",)),
    Term("HEV", "hybrid electric vehicle", "Powertrain 'HEV' (full hybrid, not plug-in).",
         ("full hybrid",)),
    Term("ICE", "internal combustion engine", "Powertrain 'ICE'.", ("combustion", "petrol")),
    Term("LC", "local currency", "The currency of the row's country (column local_currency); "
         "amounts in *_lc columns.", ("local currency",)),
    Term("HQ", "headquarters", "Region, country and area code 'HQ': global key accounts, "
         "intercompany sales and central functions. Not a sales region.",
         ("headquarters", "corporate centre")),
    Term("Caliber", "accounting caliber", "Every fact row exists twice: caliber 'A' "
         "(management view) and caliber 'B' (statutory view). Never add them up.",
         ("accounting caliber", "calibre")),
    Term("GKA", "global key accounts", "Customer group CG_GKA: rental and ride-hailing fleets "
         "contracted and booked at headquarters.", ("key accounts",)),
    Term("IC", "intercompany", "Sales to Group Internal (is_intercompany = 1); eliminated in "
         "caliber B.", ("intercompany", "internal sales")),
    Term("Period", "reporting month", "A month written 'YYYYMM' as text, e.g. '202502'.",
         ("reporting period", "accounting period")),
)

METRICS = (
    Metric("Revenue", "SUM(<amount>) WHERE report_item_level1 = 'Revenue'",
           "Vehicle sales plus parts and service revenue (REV_VEH + REV_SVC).", "indicator",
           "currency", ("sales", "turnover", "top line", "income"), ("report_item_level1",)),
    Metric("Cost of sales", "SUM(<amount>) WHERE report_item_level1 = 'Cost of sales'",
           "COGS_VEH + COGS_SVC.", "indicator", "currency", ("COGS",), ("report_item_level1",)),
    Metric("Operating expenses", "SUM(<amount>) WHERE report_item_level1 = 'Operating expenses'",
           "SELL_EXP + ADMIN_EXP + RND_EXP.", "indicator", "currency", ("opex",),
           ("report_item_level1",)),
    Metric("Gross profit", "Revenue - Cost of sales",
           "SUM(CASE WHEN report_item_level1 = 'Revenue' THEN <amount> ELSE 0 END) - "
           "SUM(CASE WHEN report_item_level1 = 'Cost of sales' THEN <amount> ELSE 0 END)",
           "metric", "currency", ("GP",)),
    Metric("Gross margin", "(Revenue - Cost of sales) / Revenue",
           "Gross profit as a share of revenue, a ratio between 0 and 1.", "metric", "ratio",
           ("GM", "gross margin rate")),
    Metric("Operating profit", "Revenue - Cost of sales - Operating expenses",
           "Gross profit minus operating expenses.", "metric", "currency", ("EBIT", "OP")),
    Metric("Opex ratio", "Operating expenses / Revenue", "Operating expenses per unit of revenue.",
           "metric", "ratio", ("expense ratio",)),
    Metric("R&D intensity", "SUM(<amount> of RND_EXP) / Revenue",
           "R&D expenses as a share of revenue.", "metric", "ratio", ("R&D ratio",)),
    Metric("YoY growth", "(<amount> - <amount>_py) / <amount>_py",
           "Growth over the same period of the prior year, from the _py columns of the same rows "
           "(e.g. (SUM(ptd_amt_usd) - SUM(ptd_amt_py_usd)) / SUM(ptd_amt_py_usd)).", "metric",
           "ratio", ("YoY", "year-over-year growth", "growth vs last year")),
    Metric("MoM growth", "(this period - previous period) / previous period",
           "Growth over the previous month, comparing ptd amounts of two periods.", "metric",
           "ratio", ("MoM", "month-over-month growth")),
    Metric("BCR", "actual / budget",
           "Budget completion rate: caliber-A actuals (profit_and_loss) divided by the "
           "'Budget' scenario of budget_and_forecast, same brand, scope, period, time window "
           "(ptd_amt or ytd_amt) and currency. Without a named measure it is revenue's BCR.",
           "metric", "ratio", ("budget completion rate", "budget attainment"),
           ("profit_and_loss.ytd_amt", "budget_and_forecast.ytd_amt")),
    Metric("Budget variance", "actual - budget",
           "Caliber-A actuals minus the 'Budget' scenario, same scope and currency.", "metric",
           "currency", ("variance to budget",)),
    Metric("ASP", "SUM(<amount> of REV_VEH) / SUM(<qty>)",
           "Average selling price per vehicle: vehicle sales revenue divided by units "
           "(ptd_qty / ytd_qty, which are filled on REV_VEH rows only).", "metric", "currency",
           ("average selling price",), ("ptd_qty", "ytd_qty")),
    Metric("NEV share", "units of BEV and PHEV models / all units",
           "Share of new energy vehicles in units sold.", "metric", "ratio",
           ("NEV penetration", "electrified share"), ("powertrain", "ptd_qty")),
    Metric("Discount rate", "SUM(discount_<cur>) / SUM(gross_sales_<cur>)",
           "Average invoice discount in the sales ledger.", "metric", "ratio",
           ("average discount",), ("discount_usd", "gross_sales_usd")),
    Metric("Discount band", _discount_band_case(),
           "An invoice's discount band in the sales ledger: its discount over its gross "
           "sales, lower bound inclusive. Group invoices by it to compare the bands' units, "
           "growth and price realisation.", "term", None,
           ("discount bands", "discount tier", "discount level"),
           ("discount_usd", "gross_sales_usd")),
    Metric("Price realisation", "SUM(net_sales_usd) / SUM(units * list_price_usd)",
           "The share of list price the sales ledger's invoices realise: net sales over units "
           "times list price (USD).", "metric", "ratio",
           ("realised price", "price realization"),
           ("net_sales_usd", "units", "list_price_usd")),
    Metric("Units sold", "SUM(<qty>) on REV_VEH rows", "Vehicles sold (ptd_qty, ytd_qty, ...); "
           "the sales ledger's units give the same monthly totals.", "indicator", "vehicles",
           ("volume", "deliveries", "units"), ("ptd_qty",)),
)
# fmt: on

PREDICATES = (
    Predicate(
        "Retail channel",
        "channel IN ('Retail Store', 'Kiosk')",
        "Own retail stores and shopping-mall kiosks count as one retail channel.",
        ("retail", "retail sales", "stores and kiosks"),
        ("channel",),
    ),
    Predicate(
        "New energy vehicles",
        "powertrain IN ('BEV', 'PHEV')",
        "NEV: battery-electric and plug-in hybrid models.",
        ("NEV models", "electrified vehicles"),
        ("powertrain",),
    ),
    Predicate(
        "Sales regions",
        "region_code <> 'HQ'",
        "Regions that sell to customers; headquarters is not one of them.",
        ("excluding headquarters", "regional business"),
        ("region_code",),
    ),
    Predicate(
        "External customers",
        "is_intercompany = 0",
        "Everything except sales to Group Internal.",
        ("third-party customers", "external sales"),
        ("is_intercompany",),
    ),
    Predicate(
        "Revenue items",
        "report_item_level1 = 'Revenue'",
        "REV_VEH and REV_SVC.",
        ("revenue lines",),
        ("report_item_level1",),
    ),
    Predicate(
        "Cost of sales items",
        "report_item_level1 = 'Cost of sales'",
        "COGS_VEH and COGS_SVC.",
        ("COGS lines",),
        ("report_item_level1",),
    ),
    Predicate(
        "Operating expense items",
        "report_item_level1 = 'Operating expenses'",
        "SELL_EXP, ADMIN_EXP and RND_EXP.",
        ("opex lines",),
        ("report_item_level1",),
    ),
    Predicate(
        "SG&A items",
        "report_item_code IN ('SELL_EXP', 'ADMIN_EXP')",
        "Selling plus administrative expenses.",
        ("SG&A lines",),
        ("report_item_code",),
    ),
)
