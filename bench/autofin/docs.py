"""The knowledge pack's Markdown documents, generated from the catalog, glossary and rules.

Documents are what a company would have written down (a finance handbook); the UKF entries in
`bench.autofin.knowledge` are the same knowledge cut into retrievable pieces.
"""

from __future__ import annotations

from bench.autofin.catalog import (
    BRANDS,
    COMPANY,
    COUNTRIES,
    CUSTOMER_GROUPS,
    REGIONS,
    REPORT_ITEMS,
    REPORTING_CURRENCIES,
    RETAIL_CHANNELS,
    models_of,
)
from bench.autofin.glossary import METRICS, PREDICATES, TERMS
from bench.autofin.rules import rules


def _table(header: tuple[str, ...], rows: list[tuple]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def overview() -> str:
    brands = _table(
        ("code", "brand", "focus", "income table", "sales ledger"),
        [(b.code, b.name, b.focus, b.income_table, b.ledger_table) for b in BRANDS],
    )
    return f"""# {COMPANY}: finance data overview

{COMPANY} sells cars under eight brands. Each brand is a department with its own income table
(monthly amounts by caliber, region, customer, vehicle model and report item) and sales ledger
(invoices). The group-level tables `profit_and_loss` and `budget_and_forecast` cover all brands.

{brands}

## Which table to use

{next(r.content for r in rules() if r.name == "Which table to use")}

Monthly periods run from 202001 to 202512. Amounts are positive numbers: costs and expenses are
stored as positive amounts and subtracted from revenue where a metric says so.
"""


def glossary() -> str:
    rows = [(t.name, t.expansion, t.definition, ", ".join(t.synonyms)) for t in TERMS]
    return (
        "# Glossary and abbreviations\n\n"
        + _table(("term", "stands for", "meaning", "also said"), rows)
        + "\n"
    )


def fiscal_calendar() -> str:
    calendar_rules = [r for r in rules() if r.kind == "temporal"]
    text = "\n\n".join(f"## {r.name}\n\n{r.content}" for r in calendar_rules)
    examples = _table(
        ("asked on", "this month", "last month", "this year (YTD)", "last year"),
        [
            ("2025-03-05", "202502", "202501", "FY2025: ytd at 202502", "FY2024: ytd at 202403"),
            ("2025-03-15", "202503", "202502", "FY2025: ytd at 202503", "FY2024: ytd at 202403"),
            ("2025-04-20", "202504", "202503", "FY2026: ytd at 202504", "FY2025: ytd at 202503"),
        ],
    )
    return f"# Fiscal calendar and data refresh\n\n{text}\n\n## Examples\n\n{examples}\n"


def currencies_and_calibers() -> str:
    defaults = _table(
        ("region", "name", "default currency"), [(r.code, r.name, r.currency) for r in REGIONS]
    )
    currencies = ", ".join(REPORTING_CURRENCIES)
    return f"""# Currencies and calibers

## Currencies

Reporting currencies: {currencies}. Wide tables (income_*, sales_ledger_*) have one column per
currency (`ytd_amt_usd`, `ytd_amt_eur`, ...) plus local-currency columns (`*_lc`, currency in
`local_currency`). Narrow tables (profit_and_loss, budget_and_forecast) have a `currency` column
and one row per currency. Actuals are converted at the month's rate (`fx_rates.rate_per_usd`),
budgets at the budget rate (the rate of the fiscal year's first month).

Users see amounts in their region's currency unless they name one:

{defaults}

## Calibers

Every actual row exists in two accounting calibers. Caliber A is the management view (sales by
destination, intercompany sales at transfer prices). Caliber B is the statutory view by legal
entity: intercompany sales are eliminated and central costs are allocated, so revenue is lower
and costs are higher. Always filter one caliber: the question's, else the user's profile
caliber, else A. Budgets and forecasts exist for caliber A only.
"""


def organisation() -> str:
    geography = _table(
        ("region", "country", "national areas", "local currency"),
        [
            (c.region, f"{c.name} ({c.code})", ", ".join(a.name for a in c.areas), c.currency)
            for c in COUNTRIES
        ],
    )
    regions = _table(
        ("code", "name", "also called"), [(r.code, r.name, ", ".join(r.aliases)) for r in REGIONS]
    )
    groups = _table(
        ("code", "customer group", "type", "also called"),
        [(g.code, g.name, g.kind, ", ".join(g.aliases)) for g in CUSTOMER_GROUPS],
    )
    retail = " and ".join(f"'{c}'" for c in RETAIL_CHANNELS)
    return f"""# Organisation: regions, headquarters, customers and channels

## Region hierarchy (region > country > national area)

{regions}

{geography}

## Headquarters

Region 'HQ' (Headquarters) is not a sales region. It books global key accounts (rental and
ride-hailing fleets), intercompany sales to Group Internal and the central administrative and
R&D costs, so its revenue and expenses dwarf any single region. Exclude it from rankings and
comparisons of regions; keep it in brand and group totals.

## Customer hierarchy (customer group > customer)

{groups}

Dealers belong to the regional dealer group; direct consumers, FleetOne and the public sector
have one customer per country.

## Channels

Dealer, Fleet, Online, Retail Store, Kiosk and Intercompany. Retail stores and mall kiosks are
managed as one retail channel: "retail" means {retail}.
"""


def products() -> str:
    sections = []
    for brand in BRANDS:
        rows = [
            (m.code, m.name, m.nickname, m.segment, m.powertrain, f"{m.price_usd:,}")
            for m in models_of(brand.code)
        ]
        header = ("code", "model", "nickname", "segment", "powertrain", "list price USD")
        sections.append(f"## {brand.name} ({brand.code}): {brand.focus}\n\n{_table(header, rows)}")
    intro = (
        'Sales and marketing call models by their nicknames ("the Comet" is the Nova 200, '
        "model_code 'NV200'). Tables hold model_code and model_name only."
    )
    body = "\n\n".join(sections)
    return f"# Vehicle models and their nicknames\n\n{intro}\n\n{body}\n"


def metrics() -> str:
    parts = [
        f"## {m.name}\n\n`{m.formula}`\n\n{m.description}"
        + (f"\n\nAlso: {', '.join(m.synonyms)}." if m.synonyms else "")
        for m in METRICS
    ]
    predicates = _table(
        ("name", "condition", "meaning"),
        [(p.name, f"`{p.condition}`", p.description) for p in PREDICATES],
    )
    items = _table(
        ("code", "report item", "level 1"), [(i.code, i.name, i.level1) for i in REPORT_ITEMS]
    )
    return (
        "# Metrics and report items\n\n`<amount>` is the amount column of the time window and "
        "currency asked for (e.g. `ptd_amt_usd`, `ytd_amt_eur`).\n\n"
        + "\n\n".join(parts)
        + f"\n\n## Report items\n\n{items}\n\n## Named filters\n\n{predicates}\n"
    )


def reporting_rules() -> str:
    body = "\n".join(f"- **{r.name}** ({r.kind}): {r.content}" for r in rules())
    return f"# Reporting rules\n\n{body}\n"


def documents() -> dict[str, str]:
    """File name -> Markdown text, in a fixed order."""
    return {
        "overview.md": overview(),
        "glossary.md": glossary(),
        "fiscal_calendar.md": fiscal_calendar(),
        "currencies_and_calibers.md": currencies_and_calibers(),
        "organisation.md": organisation(),
        "products.md": products(),
        "metrics.md": metrics(),
        "reporting_rules.md": reporting_rules(),
    }
