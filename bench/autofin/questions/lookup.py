"""Templates that hinge on private names and business definitions: model nicknames, customer
groups, the retail channel, budgets (BCR) and the sales ledger."""

from __future__ import annotations

from bench.autofin import rules as R
from bench.autofin.catalog import (
    MODELS,
    RETAIL_CHANNELS,
    brand,
    country,
    customer_group,
    region,
)
from bench.autofin.questions.core import Draft
from bench.autofin.questions.measures import REVENUE, conditions, sentence
from bench.autofin.questions.measures import place as in_sentence
from bench.autofin.questions.slots import CONTEXT, IMPLICIT, NO_QUARTERS, PRIVATE, Ask

CALIBER_A = "caliber = 'A'"
BUDGET = "scenario = 'Budget'"
RETAIL = "channel IN ({})".format(", ".join(f"'{c}'" for c in RETAIL_CHANNELS))


def model_nickname(ask: Ask) -> Draft:
    """ "How many Comets did we sell last month?" (the Comet is the Nova 200, NV200)."""
    vehicle = ask.pick(MODELS)
    owner = brand(vehicle.brand)
    name = ask.pick((vehicle.nickname, f"{owner.name} {vehicle.nickname}"))
    ask.need(PRIVATE, knowledge=[name])
    window = ask.window()
    table = ask.table(owner.income_table)
    filters = [f"period = '{window.period}'", f"model_code = '{vehicle.code}'"]
    if ask.chance(0.5):
        units = ask.qty(window.kind)
        ask.need(knowledge=[R.ONE_CALIBER, "Units sold"])
        filters += [f"caliber = '{ask.profile['caliber']}'", "report_item_code = 'REV_VEH'"]
        sql = f"SELECT SUM({units}) AS units FROM {table} {conditions(*filters)}"
        text = ask.say(
            f"How many {name}s did we sell {window.phrase}?",
            f"How many {name} vehicles were sold {window.phrase}?",
        )
        return Draft(sentence(text), sql)
    currency, money = ask.currency()
    caliber, calibre = ask.caliber()
    column = ask.amount(window.kind, currency)
    filters += [f"caliber = '{caliber}'", REVENUE]
    ask.need(knowledge=["Revenue"])
    sql = f"SELECT SUM({column}) AS revenue FROM {table} {conditions(*filters)}"
    text = ask.say(
        f"{name} revenue {window.phrase}{money}{calibre}?",
        f"How much revenue did the {name} generate {window.phrase}{calibre}{money}?",
    )
    return Draft(sentence(text), sql, level=1)


def customer_revenue(ask: Ask) -> Draft:
    """ "Nova revenue from Meridian YTD?" / "Top 3 external customers of Titan last year"."""
    who, window = ask.brand(), ask.window()
    currency, money = ask.currency()
    caliber, calibre = ask.caliber()
    table, column = ask.table(who.brand.income_table), ask.amount(window.kind, currency)
    filters = (f"period = '{window.period}'", f"caliber = '{caliber}'", REVENUE)
    ask.need(knowledge=["Revenue", "Customer hierarchy"])
    if ask.chance(0.35):
        ask.need(PRIVATE, knowledge=["External customers"])
        ask.column("customer_name")
        sql = (
            f"SELECT customer_name, SUM({column}) AS revenue FROM {table} "
            f"{conditions(*filters, 'is_intercompany = 0')} GROUP BY customer_code, "
            f"customer_name ORDER BY revenue DESC LIMIT 3"
        )
        text = ask.say(
            f"Top 3 external customers of {who.obj} {window.phrase}{money}{calibre}?",
            f"Who were {who.poss} three largest external customers by revenue "
            f"{window.phrase}{calibre}{money}?",
        )
        return Draft(sentence(text), sql, level=1, order_relevant=True)
    groups = sorted({line.customer.group for line in ask.world.lines[who.brand.code]})
    group = customer_group(ask.pick(groups))
    name = group.name
    if group.aliases and ask.chance(0.6):
        name = ask.pick(group.aliases)
        ask.need(PRIVATE, knowledge=[name])
    ask.column("customer_group_code")
    sql = f"SELECT SUM({column}) AS revenue FROM {table} " + conditions(
        *filters, f"customer_group_code = '{group.code}'"
    )
    text = ask.say(
        f"{who.adj} revenue from {name} {window.phrase}{money}{calibre}?",
        f"How much revenue did {who.subj} make with {name} {window.phrase}{calibre}{money}?",
    )
    return Draft(sentence(text), sql)


def retail_revenue(ask: Ask) -> Draft:
    """ "Nova retail revenue in France this quarter?" (retail stores and kiosks together)."""
    who, window = ask.brand(), ask.window()
    ask.need(PRIVATE, knowledge=[R.RETAIL_CHANNEL, "Retail channel", "Revenue"])
    currency, money = ask.currency()
    caliber, calibre = ask.caliber()
    table, column = ask.table(who.brand.income_table), ask.amount(window.kind, currency)
    ask.column("channel")
    lines = ask.world.lines[who.brand.code]
    retail_countries = sorted({ln.country for ln in lines if ln.channel in RETAIL_CHANNELS})
    place, where = "", ""
    if retail_countries and ask.chance(0.5):
        chosen = country(ask.pick(retail_countries))
        place, where = f" in {in_sentence(chosen)}", f"country_code = '{chosen.code}'"
    sql = f"SELECT SUM({column}) AS revenue FROM {table} " + conditions(
        f"period = '{window.period}'", f"caliber = '{caliber}'", REVENUE, RETAIL, where
    )
    text = ask.say(
        f"{who.adj} retail revenue{place} {window.phrase}{money}{calibre}?",
        f"How much revenue did {who.subj} make through the retail channel{place} "
        f"{window.phrase}{calibre}{money}?",
    )
    return Draft(sentence(text), sql)


def budget(ask: Ask) -> Draft:
    """ "Vega BCR this year?" / "How far is our revenue from budget?" (caliber A, P&L vs budget)."""
    window = ask.window(NO_QUARTERS)
    ask.need(PRIVATE, knowledge=[R.BUDGET_CALIBER, R.NARROW_TABLES])
    currency, money = ask.currency()
    column = ask.column(f"{window.kind}_amt")
    scope, whose, owner = "", "the group's", "group"
    if ask.chance(0.75):
        who = ask.brand()
        scope, whose, owner = f"dept_code = '{who.brand.code}'", who.poss, who.adj
    area, place = "", ""
    if ask.chance(0.3):
        chosen = region(ask.pick(["EUR", "UKI", "NAM", "LAM", "CHN", "APAC", "MEA"]))
        area, place = f"region_code = '{chosen.code}'", f" in {chosen.name}"
        if ask.profile["region"] == chosen.code and ask.chance(0.5):
            ask.need(CONTEXT)
            place = " in my region"
    common = (f"period = '{window.period}'", f"currency = '{currency}'", REVENUE, scope, area)
    actual = f"(SELECT SUM({column}) FROM profit_and_loss {conditions(*common, CALIBER_A)})"
    planned = f"(SELECT SUM({column}) FROM budget_and_forecast {conditions(*common, BUDGET)})"
    if ask.chance(0.6):
        ask.need(knowledge=["BCR"])
        sql = f"SELECT {actual} / {planned} AS bcr"
        text = ask.say(
            f"{owner} BCR{place} {window.phrase}?",
            f"What was {whose} budget completion rate for revenue{place} {window.phrase}?",
        )
        return Draft(sentence(text), sql, level=2)
    ask.need(knowledge=["Budget variance", "Revenue"])
    sql = f"SELECT {actual} - {planned} AS budget_variance"
    text = ask.say(
        f"{owner} revenue vs budget{place} {window.phrase}{money}?",
        f"By how much did {whose} revenue{place} {window.phrase} differ from budget{money}?",
    )
    return Draft(sentence(text), sql, level=2)


def ledger(ask: Ask) -> Draft:
    """Sales-ledger questions: discount rate, invoices to a customer group, largest invoice."""
    who, window = ask.brand(), ask.window()
    table = ask.table(who.brand.ledger_table)
    style = ask.pick(("discount", "invoices", "largest", "channels"))
    if style == "discount":
        currency, _ = ask.currency()
        ask.need(PRIVATE, knowledge=["Discount rate"])
        discount = ask.column(f"discount_{currency.lower()}")
        gross = ask.column(f"gross_sales_{currency.lower()}")
        sql = f"SELECT SUM({discount}) / SUM({gross}) AS discount_rate FROM {table} " + conditions(
            window.filter
        )
        text = ask.say(
            f"{who.adj} average discount {window.phrase}?",
            f"What was the average discount rate on {who.poss} invoices {window.phrase}?",
        )
        return Draft(sentence(text), sql, level=1)
    if style == "invoices":
        groups = sorted({line.customer.group for line in ask.world.lines[who.brand.code]})
        group = customer_group(ask.pick(groups))
        name = group.name
        if group.aliases and ask.chance(0.6):
            name = ask.pick(group.aliases)
            ask.need(PRIVATE, knowledge=[name])
        ask.column("customer_group_code")
        sql = f"SELECT COUNT(*) AS invoices FROM {table} " + conditions(
            window.filter, f"customer_group_code = '{group.code}'"
        )
        text = ask.say(
            f"Number of {who.adj} invoices to {name} {window.phrase}?",
            f"How many invoices did {who.subj} issue to {name} {window.phrase}?",
        )
        return Draft(sentence(text), sql)
    if style == "largest":
        currency, money = ask.currency()
        ask.need(IMPLICIT)
        net = ask.column(f"net_sales_{currency.lower()}")
        sql = (
            f"SELECT invoice_no, {net} FROM {table} {conditions(window.filter)} "
            f"ORDER BY {net} DESC, invoice_no LIMIT 1"
        )
        text = ask.say(
            f"{who.poss} largest invoice {window.phrase}{money}?",
            f"Which of {who.poss} invoices was the largest {window.phrase}{money}?",
        )
        return Draft(sentence(text), sql)
    ask.need(knowledge=["Units sold"])
    units = ask.column("units")
    sql = (
        f"SELECT channel, SUM({units}) AS units FROM {table} {conditions(window.filter)} "
        "GROUP BY channel"
    )
    text = ask.say(
        f"{who.adj} units by channel {window.phrase}?",
        f"How many vehicles did {who.subj} invoice through each channel {window.phrase}?",
    )
    return Draft(sentence(text), sql)
