"""Templates about one brand's figures, read from its wide ``income_<brand>`` table."""

from __future__ import annotations

from bench.autofin import calendar as cal
from bench.autofin import rules as R
from bench.autofin.catalog import NEV_POWERTRAINS, country
from bench.autofin.questions.core import Draft
from bench.autofin.questions.measures import (
    COST_OF_SALES,
    OPEX,
    REVENUE,
    case_sum,
    conditions,
    place,
    sentence,
    use_measure,
)
from bench.autofin.questions.slots import (
    CONTEXT,
    IMPLICIT,
    MONTHLY,
    NO_QUARTERS,
    PRIVATE,
    Ask,
)
from bench.autofin.schema import amount_column

RND = "report_item_code = 'RND_EXP'"


def brand_measure(ask: Ask) -> Draft:
    """ "Nova revenue last month?" / "What was Nova's COGS in FY2024 in euros?"."""
    who, window = ask.brand(), ask.window()
    measure, words = use_measure(ask)
    currency, money = ask.currency()
    caliber, calibre = ask.caliber()
    table, column = ask.table(who.brand.income_table), ask.amount(window.kind, currency)
    base = (f"caliber = '{caliber}'", measure.condition)
    sql = f"SELECT SUM({column}) AS {measure.alias} FROM {table} " + conditions(
        f"period = '{window.period}'", *base
    )
    variants = ()
    if window.kind != "ptd":  # the same figure summed from the months of the window
        monthly = amount_column("ptd", currency)
        variants = (
            f"SELECT SUM({monthly}) AS {measure.alias} FROM {table} "
            + conditions(f"period BETWEEN '{window.first}' AND '{window.period}'", *base),
        )
    text = ask.say(
        f"{who.adj} {words} {window.phrase}{money}{calibre}?",
        f"What {'were' if words == 'sales' else 'was'} {who.poss} {words} {window.phrase}"
        f"{calibre}{money}?",
    )
    return Draft(sentence(text), sql, variants=variants)


RATIOS = {
    # key: (terse words, precise words, knowledge)
    "gross_margin": (("GM", "gross margin"), ("gross margin",), ("Gross margin", "GM")),
    "gross_profit": (("GP", "gross profit"), ("gross profit",), ("Gross profit", "GP")),
    "operating_profit": (("operating profit",), ("operating profit",), ("Operating profit",)),
    "opex_ratio": (("opex ratio",), ("operating expense ratio",), ("Opex ratio", "OPEX")),
    "rnd_intensity": (("R&D intensity",), ("R&D intensity",), ("R&D intensity", "R&D")),
    "asp": (("ASP",), ("average selling price per vehicle",), ("ASP",)),
}


def brand_ratio(ask: Ask) -> Draft:
    """ "Nova GM this month?" / "What was Titan's average selling price per vehicle in FY2024?"."""
    who, window = ask.brand(), ask.window()
    key = ask.pick(list(RATIOS))
    terse, precise, knowledge = RATIOS[key]
    ask.need(PRIVATE, knowledge=knowledge)
    currency, money = ask.currency()
    caliber, calibre = ask.caliber()
    table, column = ask.table(who.brand.income_table), ask.amount(window.kind, currency)
    revenue, cogs = case_sum(REVENUE, column), case_sum(COST_OF_SALES, column)
    opex = case_sum(OPEX, column)
    expression = {
        "gross_margin": f"({revenue} - {cogs}) / {revenue}",
        "gross_profit": f"{revenue} - {cogs}",
        "operating_profit": f"{revenue} - {cogs} - {opex}",
        "opex_ratio": f"{opex} / {revenue}",
        "rnd_intensity": f"{case_sum(RND, column)} / {revenue}",
    }.get(key)
    if key == "asp":
        vehicles = case_sum("report_item_code = 'REV_VEH'", column)
        expression = f"{vehicles} / SUM({ask.qty(window.kind)})"
    sql = f"SELECT {expression} AS {key} FROM {table} " + conditions(
        f"period = '{window.period}'", f"caliber = '{caliber}'"
    )
    words = ask.pick(terse if ask.terse else precise)
    text = ask.say(
        f"{who.adj} {words} {window.phrase}{money}{calibre}?",
        f"What was {who.poss} {words} {window.phrase}{calibre}{money}?",
    )
    return Draft(sentence(text), sql, level=1)


def brand_yoy(ask: Ask) -> Draft:
    """ "Zephyr revenue YoY this quarter?" / "By how much did Orion's unit sales grow ..."."""
    who, window = ask.brand(), ask.window()
    ask.need(PRIVATE, knowledge=["YoY growth", "YoY", "PY"])
    caliber, calibre = ask.caliber()
    table = ask.table(who.brand.income_table)
    if ask.chance(0.3):
        now, before = ask.qty(window.kind), ask.qty(window.kind, py=True)
        expression = f"1.0 * (SUM({now}) - SUM({before})) / SUM({before})"
        scope, words, money = "report_item_code = 'REV_VEH'", "unit sales", ""
        ask.need(knowledge=["Units sold"])
    else:
        currency, money = ask.currency()
        now, before = ask.amount(window.kind, currency), ask.amount(window.kind, currency, py=True)
        expression = f"(SUM({now}) - SUM({before})) / SUM({before})"
        scope, words = REVENUE, "revenue"
        ask.need(knowledge=["Revenue"])
    sql = f"SELECT {expression} AS yoy_growth FROM {table} " + conditions(
        f"period = '{window.period}'", f"caliber = '{caliber}'", scope
    )
    text = ask.say(
        f"{who.adj} {words} YoY {window.phrase}{money}{calibre}?",
        f"By how much did {who.poss} {words} {window.phrase} grow year over year{calibre}{money}?",
    )
    return Draft(sentence(text), sql, level=1)


def brand_mom(ask: Ask) -> Draft:
    """ "Helix revenue MoM?" (this month against the month before)."""
    who, window = ask.brand(), ask.window(MONTHLY)
    ask.need(PRIVATE, knowledge=["MoM growth", "MoM", "Revenue"])
    currency, money = ask.currency()
    caliber, calibre = ask.caliber()
    table, column = ask.table(who.brand.income_table), ask.amount("ptd", currency)
    previous = cal.shift(window.period, -1)
    now = case_sum(f"period = '{window.period}'", column)
    before = case_sum(f"period = '{previous}'", column)
    sql = f"SELECT ({now} - {before}) / {before} AS mom_growth FROM {table} " + conditions(
        f"period IN ('{previous}', '{window.period}')", f"caliber = '{caliber}'", REVENUE
    )
    text = ask.say(
        f"{who.adj} revenue MoM {window.phrase}{money}{calibre}?",
        f"What was the month-over-month growth of {who.poss} revenue {window.phrase}"
        f"{calibre}{money}?",
    )
    return Draft(sentence(text), sql, level=1)


def performance(ask: Ask) -> Draft:
    """ "How is Nova doing in my region?": revenue and its YoY growth, newest month."""
    who, window = ask.brand(), ask.window(MONTHLY)
    ask.need(IMPLICIT, knowledge=[R.PERFORMANCE, "Revenue", "YoY growth"])
    currency, money = ask.currency()
    caliber, _ = ask.caliber()
    table = ask.table(who.brand.income_table)
    now, before = ask.amount("ptd", currency), ask.amount("ptd", currency, py=True)
    region, place = "", ""
    if ask.profile["region"] != "HQ" and ask.chance(0.6):
        ask.need(CONTEXT)
        region, place = f"region_code = '{ask.profile['region']}'", " in my region"
    sql = (
        f"SELECT SUM({now}) AS revenue, (SUM({now}) - SUM({before})) / SUM({before}) "
        f"AS yoy_growth FROM {table} "
        + conditions(f"period = '{window.period}'", f"caliber = '{caliber}'", REVENUE, region)
    )
    verb = "are we" if who.own else f"is {who.adj}"
    text = ask.say(
        f"How {verb} doing{place} {window.phrase}{money}?",
        f"How {verb} performing{place} {window.phrase}{money}?",
    )
    return Draft(sentence(text), sql, level=1)


def caliber_gap(ask: Ask) -> Draft:
    """ "How much lower is Nova's statutory revenue than its management revenue last month?"."""
    who, window = ask.brand(), ask.window()
    ask.need(PRIVATE, knowledge=["Caliber", "management caliber", "statutory caliber"])
    currency, money = ask.currency()
    table, column = ask.table(who.brand.income_table), ask.amount(window.kind, currency)
    management, statutory = case_sum("caliber = 'A'", column), case_sum("caliber = 'B'", column)
    gap = f"{management} - {statutory}"
    sql = f"SELECT {gap} AS caliber_gap FROM {table} " + conditions(
        f"period = '{window.period}'", REVENUE
    )
    text = ask.say(
        f"{who.adj} revenue, management minus statutory view, {window.phrase}{money}?",
        f"How much higher is {who.poss} revenue in the management view than in the statutory "
        f"view {window.phrase}{money}?",
    )
    return Draft(sentence(text), sql, level=1)


def local_currency(ask: Ask) -> Draft:
    """ "Nova revenue in Japan in local currency YTD?" (``*_lc`` columns)."""
    who, window = ask.brand(), ask.window(NO_QUARTERS)
    lines = ask.world.lines[who.brand.code]
    land = country(ask.pick(sorted({line.country for line in lines if line.country != "HQ"})))
    ask.need(knowledge=["LC", "Revenue"])
    caliber, calibre = ask.caliber()
    table, column = ask.table(who.brand.income_table), ask.amount(window.kind, "lc")
    ask.column("country_code")
    sql = f"SELECT SUM({column}) AS revenue_lc FROM {table} " + conditions(
        f"period = '{window.period}'",
        f"caliber = '{caliber}'",
        REVENUE,
        f"country_code = '{land.code}'",
    )
    text = ask.say(
        f"{who.adj} revenue in {place(land)} in local currency {window.phrase}{calibre}?",
        f"What was {who.poss} revenue in {place(land)}, in local currency, "
        f"{window.phrase}{calibre}?",
    )
    return Draft(sentence(text), sql)


def monthly_trend(ask: Ask) -> Draft:
    """ "Nova monthly revenue this year?": one row per month of the window, in order."""
    who = ask.brand()
    window = ask.window(("ytd", "last_year", "fy", "qtd", "last_quarter", "quarter"))
    currency, money = ask.currency()
    caliber, calibre = ask.caliber()
    table, column = ask.table(who.brand.income_table), ask.amount("ptd", currency)
    sql = (
        f"SELECT period, SUM({column}) AS revenue FROM {table} "
        + conditions(window.filter, f"caliber = '{caliber}'", REVENUE)
        + " GROUP BY period ORDER BY period"
    )
    text = ask.say(
        f"{who.adj} monthly revenue {window.phrase}{money}{calibre}?",
        f"Show {who.poss} revenue month by month {window.phrase}{calibre}{money}.",
    )
    return Draft(sentence(text), sql, level=1, order_relevant=True)


def nev_share(ask: Ask) -> Draft:
    """ "Nova NEV share this year?": BEV and PHEV units over all units."""
    who, window = ask.brand(), ask.window()
    ask.need(PRIVATE, knowledge=["NEV share", "NEV", "New energy vehicles"])
    table, units = ask.table(who.brand.income_table), ask.qty(window.kind)
    nev = ", ".join(f"'{p}'" for p in NEV_POWERTRAINS)
    sql = (
        f"SELECT 1.0 * {case_sum(f'powertrain IN ({nev})', units)} / SUM({units}) AS nev_share "
        f"FROM {table} "
        + conditions(
            f"period = '{window.period}'",
            f"caliber = '{ask.profile['caliber']}'",
            "report_item_code = 'REV_VEH'",
        )
    )
    text = ask.say(
        f"{who.adj} NEV share {window.phrase}?",
        f"What share of {who.poss} units sold {window.phrase} were new energy vehicles?",
    )
    return Draft(sentence(text), sql, level=1)
