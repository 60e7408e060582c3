"""AutoFin's reporting rules: fiscal calendar, data refresh, defaults from the user profile.

Rules whose applicability depends on the question's context carry triggers (plain JSON naming a
registered trigger): ``query_time_window`` for the refresh rule, ``user_profile_match`` for the
currency and caliber defaults.
"""

from __future__ import annotations

from bench.autofin.calendar import FISCAL_YEAR_START_MONTH, REFRESH_DAY
from bench.autofin.catalog import BRANDS, CALIBERS, REGIONS, models_of
from bench.autofin.glossary import Rule

FISCAL_CALENDAR = "Fiscal calendar"
REFRESH_EARLY = "Data refresh: before the 10th"
REFRESH_LATE = "Data refresh: from the 10th"
DEFAULT_PERIOD = "Default period"
HQ_EXCLUSION = "Headquarters excluded from regional rankings"
RETAIL_CHANNEL = "Retail stores and kiosks are one channel"
ONE_CALIBER = "Always one caliber"
BUDGET_CALIBER = "Budgets are caliber A"
OWN_BRAND = "Our brand means the user's department"
PERFORMANCE = "Performance means revenue and YoY growth"
BEST_MEANS_REVENUE = "Best and top rank by revenue"
SALES_MEANS_REVENUE = "Sales means revenue unless units are asked"
NARROW_TABLES = "Filter the currency on narrow tables"
TABLE_CHOICE = "Which table to use"
# the calendar facts as data (agents.rag.calendar reads them from the rules' content_resources)
FISCAL_YEAR = {
    "fiscal_year_start_month": FISCAL_YEAR_START_MONTH,
    "fiscal_year_named_by": "end",
    "period_format": "YYYYMM",
    # the to-date figures of the wide income tables: ptd_amt_usd, qtd_qty, ytd_amt_py_eur, ...
    "to_date_columns": {"month": "ptd_", "quarter": "qtd_", "year": "ytd_"},
    # every fact table keeps its month in `period` (a query on one other period gets the
    # question's: agents.sql.period_pin)
    "period_column": "period",
}


# what the chain adds to a ranking or share of regions that counted headquarters in
# (agents.sql.default_filters): a query grouping by region, or reading one in a CASE
HQ_FILTER = {
    "column": "region_code",
    "op": "<>",
    "value": "HQ",
    "breakdown": ["region_code", "region_name"],
}


def own_brand_tables() -> dict[str, object]:
    """ "We" and "our" read the asker's department's tables (agents.sql.profile_tables)."""
    entities = {
        brand.code: {
            # a brand is named by its name, aliases and models ("Comets" are Nova's)
            "names": [brand.name, *brand.aliases, *_model_names(brand.code)],
            "tables": {"income": brand.income_table, "sales_ledger": brand.ledger_table},
        }
        for brand in BRANDS
    }
    words = ["we", "our", "ours", "my"]  # not "us": "US dollars"
    return {"attribute": "department", "words": words, "entities": entities}


def _model_names(brand_code: str) -> list[str]:
    names = {n for m in models_of(brand_code) for n in (m.name, m.nickname, m.code) if n}
    return sorted(names | {f"{n}s" for n in names if n.isalpha()})


def currency_rule_name(region_code: str) -> str:
    return f"Default currency for {region_code} users"


def caliber_rule_name(caliber: str) -> str:
    return f"Default caliber {caliber} from the profile"


def rules() -> list[Rule]:
    """Every rule, in a fixed order."""
    fixed = [
        Rule(
            FISCAL_CALENDAR,
            "The fiscal year runs from April to March and is named after the year it ends in "
            "(FY2025 = April 2024 to March 2025; column fiscal_year holds 'FY2025'). Fiscal "
            "quarters: Q1 = April-June, Q2 = July-September, Q3 = October-December, Q4 = "
            "January-March. 'This year', 'YTD' and 'last year' mean fiscal years; a full fiscal "
            "year is the ytd_amt of its March period; a fiscal quarter is the qtd_amt of its "
            "last month.",
            "temporal",
            synonyms=("fiscal year", "financial calendar"),
            resources={"calendar": FISCAL_YEAR},
        ),
        Rule(
            REFRESH_EARLY,
            "Data is refreshed on the 10th: each month's figures are published on the 10th of "
            "that month. Before the 10th the newest published period is the previous month: "
            "'this month' (or no period at all) means the previous calendar month, and 'last "
            "month' the month before that.",
            "temporal",
            {"query_time_window": {"day_of_month_to": 9}},
            ("data refresh", "this month"),
            {"calendar": {"publish_day": REFRESH_DAY}},
        ),
        Rule(
            REFRESH_LATE,
            "From the 10th on, the month of the question is published: 'this month' is the "
            "current calendar month and 'last month' the previous one.",
            "temporal",
            {"query_time_window": {"day_of_month_from": 10}},
            ("data refresh",),
            {"calendar": {"publish_day": REFRESH_DAY}},
        ),
        Rule(
            DEFAULT_PERIOD,
            "A question without a period asks for the newest reporting month (its PTD amount).",
            "intent",
        ),
        Rule(
            HQ_EXCLUSION,
            "Headquarters (region_code = 'HQ') books global key accounts, intercompany sales "
            "and central costs. Rankings, comparisons and shares of regions (best, worst, top, "
            "fastest growing, a region's share) exclude it: a region's share is of the total "
            "without HQ. Brand and group totals include it.",
            "validity",
            synonyms=("exclude HQ", "regional ranking"),
            resources={"default_filter": HQ_FILTER},
        ),
        Rule(
            RETAIL_CHANNEL,
            "'Retail' means the channels 'Retail Store' and 'Kiosk' together: "
            "channel IN ('Retail Store', 'Kiosk').",
            "intent",
            synonyms=("retail", "kiosks"),
        ),
        Rule(
            ONE_CALIBER,
            "Every fact row exists once per caliber (A = management, B = statutory). Always "
            "filter one caliber: the one the question names, else the user's profile caliber, "
            "else A. 'Management view' is A, 'statutory' or 'financial reporting view' is B.",
            "validity",
            synonyms=("caliber", "management caliber", "statutory caliber"),
            resources={"default_filter": {"column": "caliber", "value": "A"}},
        ),
        Rule(
            BUDGET_CALIBER,
            "Budgets and forecasts exist in caliber A only. BCR and budget variance compare "
            "caliber-A actuals from profit_and_loss with budget_and_forecast (scenario "
            "'Budget'), whatever the user's profile caliber.",
            "validity",
            synonyms=("budget caliber",),
        ),
        Rule(
            OWN_BRAND,
            "'We', 'our' and 'my brand' mean the department of the user's profile (its "
            "income_<brand> table). A user whose department is 'ALL' means the whole group: "
            "use profit_and_loss over all brands.",
            "intent",
            resources={"profile_tables": own_brand_tables()},
        ),
        Rule(
            PERFORMANCE,
            "'How is X doing' or 'performance' asks for revenue and its YoY growth in the "
            "newest reporting month.",
            "intent",
        ),
        Rule(
            BEST_MEANS_REVENUE,
            "'Best', 'top' and 'biggest' rank by revenue, highest first; 'worst' by revenue, "
            "lowest first.",
            "intent",
        ),
        Rule(
            SALES_MEANS_REVENUE,
            "'Sales' means revenue (an amount); 'how many', 'units' and 'volume' mean units "
            "sold (ptd_qty on REV_VEH rows).",
            "intent",
        ),
        Rule(
            NARROW_TABLES,
            "profit_and_loss and budget_and_forecast hold one row per currency: always filter "
            "currency (never add currencies up). Wide tables have one column per currency.",
            "validity",
        ),
        Rule(
            TABLE_CHOICE,
            "One brand: income_<brand> (PTD/QTD/YTD, prior year, all currencies, calibers, "
            "customers, models). Several brands or the whole group: profit_and_loss. Budgets: "
            "budget_and_forecast. Invoices, discounts and list prices: sales_ledger_<brand>.",
            "general",
        ),
    ]
    currency = [
        Rule(
            currency_rule_name(region.code),
            f"Users in region {region.code} ({region.name}) see amounts in {region.currency} "
            f"unless the question names another currency: *_{region.currency.lower()} columns "
            f"on wide tables, currency = '{region.currency}' on narrow ones.",
            "intent",
            {"user_profile_match": {"region": region.code}},
            ("default currency",),
            # the narrow fact tables only (the exchange rates have a currency column too)
            {
                "default_filter": {
                    "column": "currency",
                    "value": region.currency,
                    "tables": ["profit_and_loss", "budget_and_forecast"],
                }
            },
        )
        for region in REGIONS
    ]
    caliber = [
        Rule(
            caliber_rule_name(value),
            f"The user's profile says caliber {value}: filter caliber = '{value}' unless the "
            f"question names another caliber (budgets stay caliber A).",
            "intent",
            {"user_profile_match": {"caliber": value}},
            ("default caliber",),
            {"default_filter": {"column": "caliber", "value": value}},
        )
        for value in CALIBERS
    ]
    return [*fixed, *currency, *caliber]
