"""Templates that rank or compare: regions (headquarters excluded), models, areas, brands."""

from __future__ import annotations

from bench.autofin import rules as R
from bench.autofin.catalog import country, region
from bench.autofin.questions.core import Draft
from bench.autofin.questions.measures import REVENUE, case_sum, conditions, sentence
from bench.autofin.questions.measures import place as in_sentence
from bench.autofin.questions.slots import (
    CONTEXT,
    IMPLICIT,
    NO_QUARTERS,
    PRIVATE,
    Ask,
    Who,
    Window,
)

NOT_HQ = "region_code <> 'HQ'"
VEHICLES = "report_item_code = 'REV_VEH'"


def _income_basics(ask: Ask) -> tuple[Who, Window, str, str, tuple[str, ...], str]:
    """Brand, window, income table, amount column, row filters and the currency/caliber words."""
    who, window = ask.brand(), ask.window()
    currency, money = ask.currency()
    caliber, calibre = ask.caliber()
    table, column = ask.table(who.brand.income_table), ask.amount(window.kind, currency)
    filters = (f"period = '{window.period}'", f"caliber = '{caliber}'", REVENUE)
    return who, window, table, column, filters, money + calibre


def region_rank(ask: Ask) -> Draft:
    """ "Best region for Nova this year?" / "Rank Titan's sales regions by revenue ..."."""
    who, window, table, column, filters, extra = _income_basics(ask)
    ask.need(IMPLICIT, PRIVATE, knowledge=[R.HQ_EXCLUSION, "Revenue"])
    ask.column("region_name")
    style = ask.pick(("best", "worst", "top3", "all"))
    grouped = f"FROM {table} {conditions(*filters, NOT_HQ)} GROUP BY region_name"
    if style in ("best", "worst"):
        ask.need(knowledge=[R.BEST_MEANS_REVENUE])
        order = "DESC" if style == "best" else "ASC"
        sql = f"SELECT region_name {grouped} ORDER BY SUM({column}) {order} LIMIT 1"
        text = ask.say(
            f"{style.capitalize()} region for {who.obj} {window.phrase}{extra}?",
            f"Which sales region had the {'highest' if style == 'best' else 'lowest'} "
            f"revenue for {who.obj} {window.phrase}{extra}?",
        )
        return Draft(sentence(text), sql, level=1)
    limit = " LIMIT 3" if style == "top3" else ""
    sql = f"SELECT region_name, SUM({column}) AS revenue {grouped} ORDER BY revenue DESC{limit}"
    what = "top 3 regions" if style == "top3" else "regions ranked by revenue"
    text = ask.say(
        f"{who.adj} {what} {window.phrase}{extra}?",
        f"List the {what.replace('regions', 'sales regions')} for {who.obj} "
        f"{window.phrase}{extra}, highest first.",
    )
    return Draft(sentence(text), sql, level=1, order_relevant=True)


def region_growth(ask: Ask) -> Draft:
    """ "Fastest-growing region for Orion YTD?" (YoY growth, headquarters excluded)."""
    who, window, table, column, filters, extra = _income_basics(ask)
    ask.need(IMPLICIT, PRIVATE, knowledge=[R.HQ_EXCLUSION, "YoY growth", "PY"])
    ask.column("region_name")
    before = ask.amount(window.kind, column.rsplit("_", 1)[1], py=True)
    growth = f"(SUM({column}) - SUM({before})) / SUM({before})"
    sql = (
        f"SELECT region_name FROM {table} {conditions(*filters, NOT_HQ)} "
        f"GROUP BY region_name ORDER BY {growth} DESC LIMIT 1"
    )
    text = ask.say(
        f"Fastest-growing region for {who.obj} {window.phrase}{extra}?",
        f"Which sales region grew {who.poss} revenue fastest year over year "
        f"{window.phrase}{extra}?",
    )
    return Draft(sentence(text), sql, level=2)


def region_share(ask: Ask) -> Draft:
    """ "What share of Nova revenue came from Europe last month?" (of the total without HQ)."""
    who, window, table, column, filters, extra = _income_basics(ask)
    ask.need(IMPLICIT, PRIVATE, knowledge=[R.HQ_EXCLUSION, "Revenue"])
    chosen = region(ask.pick(["EUR", "UKI", "NAM", "LAM", "CHN", "APAC", "MEA"]))
    name = chosen.name
    if ask.chance(0.4):
        name = ask.pick(chosen.aliases)
        ask.need(knowledge=[name])
    if ask.profile["region"] == chosen.code and ask.chance(0.5):
        ask.need(CONTEXT)
        name = "my region"
    part = case_sum(f"region_code = '{chosen.code}'", column)
    sql = f"SELECT {part} / SUM({column}) AS share FROM {table} " + conditions(*filters, NOT_HQ)
    text = ask.say(
        f"{name} share of {who.adj} revenue {window.phrase}{extra}?",
        f"What share of {who.poss} revenue {window.phrase} came from {name}{extra}?",
    )
    return Draft(sentence(text), sql, level=1)


def top_models(ask: Ask) -> Draft:
    """ "Top 3 Nova models YTD?" (by revenue unless units are asked for)."""
    who, window, table, column, filters, extra = _income_basics(ask)
    limit = ask.pick((3, 5))
    ask.column("model_name")
    if ask.chance(0.3):
        units = ask.qty(window.kind)
        rest = (f for f in filters if f != REVENUE)
        sql = (
            f"SELECT model_name, SUM({units}) AS units FROM {table} "
            f"{conditions(*rest, VEHICLES)} "
            f"GROUP BY model_code, model_name ORDER BY units DESC, model_code LIMIT {limit}"
        )
        ask.need(knowledge=["Units sold"])
        text = ask.say(
            f"{who.poss} top {limit} models by units {window.phrase}?",
            f"Which {limit} of {who.poss} models sold the most vehicles {window.phrase}?",
        )
        return Draft(sentence(text), sql, level=1, order_relevant=True)
    ask.need(IMPLICIT, knowledge=[R.BEST_MEANS_REVENUE, "Revenue"])
    sql = (
        f"SELECT model_name, SUM({column}) AS revenue FROM {table} {conditions(*filters)} "
        f"GROUP BY model_name ORDER BY revenue DESC LIMIT {limit}"
    )
    text = ask.say(
        f"{who.poss} top {limit} models {window.phrase}{extra}?",
        f"What were {who.poss} top {limit} models {window.phrase}{extra}?",
    )
    return Draft(sentence(text), sql, level=1, order_relevant=True)


def area_best(ask: Ask) -> Draft | None:
    """ "Which national area of Germany brought Nova the most revenue last year?"."""
    who, window, table, column, filters, extra = _income_basics(ask)
    areas: dict[str, set[str]] = {}
    for line in ask.world.lines[who.brand.code]:
        areas.setdefault(line.country, set()).add(line.area)
    candidates = sorted(code for code, found in areas.items() if len(found) > 1)
    if not candidates:
        return None
    land = country(ask.pick(candidates))
    ask.need(knowledge=["Region hierarchy", "Revenue"])
    ask.column("area_name")
    in_country = f"country_code = '{land.code}'"
    sql = (
        f"SELECT area_name FROM {table} {conditions(*filters, in_country)}"
        f" GROUP BY area_name ORDER BY SUM({column}) DESC LIMIT 1"
    )
    text = ask.say(
        f"Top national area in {in_sentence(land)} for {who.obj} {window.phrase}{extra}?",
        f"Which national area of {in_sentence(land)} brought {who.obj} the most revenue "
        f"{window.phrase}{extra}?",
    )
    return Draft(sentence(text), sql, level=1)


def brand_compare(ask: Ask) -> Draft:
    """Group-level questions on ``profit_and_loss``: best brand, revenue by brand, group total."""
    window = ask.window(NO_QUARTERS)
    currency, money = ask.currency()
    caliber, calibre = ask.caliber()
    ask.need(knowledge=[R.NARROW_TABLES, R.TABLE_CHOICE, "Revenue"])
    column = ask.column(f"{window.kind}_amt")
    filters = (
        f"period = '{window.period}'",
        f"caliber = '{caliber}'",
        f"currency = '{currency}'",
        REVENUE,
    )
    base = f"FROM profit_and_loss {conditions(*filters)}"
    extra = f"{money}{calibre}"
    style = ask.pick(("best", "by_brand", "total", "growth"))
    if style == "best":
        ask.need(IMPLICIT, knowledge=[R.BEST_MEANS_REVENUE])
        sql = f"SELECT dept_name {base} GROUP BY dept_name ORDER BY SUM({column}) DESC LIMIT 1"
        text = ask.say(
            f"Best brand {window.phrase}{extra}?",
            f"Which brand had the highest revenue {window.phrase}{extra}?",
        )
        return Draft(sentence(text), sql)
    if style == "by_brand":
        sql = f"SELECT dept_name, SUM({column}) AS revenue {base} GROUP BY dept_name"
        text = ask.say(
            f"Revenue by brand {window.phrase}{extra}?",
            f"Show the revenue of each brand {window.phrase}{extra}.",
        )
        return Draft(sentence(text), sql)
    if style == "growth":
        ask.need(PRIVATE, knowledge=["YoY growth", "PY"])
        before = ask.column(f"{window.kind}_amt_py")
        growth = f"(SUM({column}) - SUM({before})) / SUM({before})"
        sql = f"SELECT dept_name {base} GROUP BY dept_name ORDER BY {growth} DESC LIMIT 1"
        text = ask.say(
            f"Which brand grew fastest YoY {window.phrase}{extra}?",
            f"Which brand had the highest year-over-year revenue growth {window.phrase}{extra}?",
        )
        return Draft(sentence(text), sql, level=1)
    sql = f"SELECT SUM({column}) AS revenue {base}"
    whose = "group"
    if ask.profile["department"] == "ALL" and ask.chance(0.5):
        ask.need(CONTEXT, knowledge=[R.OWN_BRAND])
        whose = "our"
    text = ask.say(
        f"{whose} revenue {window.phrase}{extra}?",
        f"What was {'the group' if whose == 'group' else 'our'} total revenue across all brands "
        f"{window.phrase}{extra}?",
    )
    return Draft(sentence(text), sql)
