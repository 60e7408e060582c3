"""Measures the templates ask about, and small SQL and wording helpers shared by them."""

from __future__ import annotations

from dataclasses import dataclass

from bench.autofin import rules as R
from bench.autofin.catalog import Country
from bench.autofin.questions.slots import IMPLICIT, PRIVATE, Ask


@dataclass(frozen=True)
class Measure:
    """An amount filtered by report items: how it is said, and what saying it that way needs."""

    alias: str
    terse: tuple[str, ...]
    precise: tuple[str, ...]
    condition: str
    knowledge: tuple[str, ...] = ()
    traits: tuple[str, ...] = ()


REVENUE = "report_item_level1 = 'Revenue'"
COST_OF_SALES = "report_item_level1 = 'Cost of sales'"
OPEX = "report_item_level1 = 'Operating expenses'"

MEASURES = (
    Measure("revenue", ("revenue",), ("total revenue", "revenue"), REVENUE, ("Revenue",)),
    Measure(
        "revenue",
        ("sales",),
        ("sales",),
        REVENUE,
        ("Revenue", R.SALES_MEANS_REVENUE),
        (IMPLICIT,),
    ),
    Measure("revenue", ("top line", "turnover"), ("turnover",), REVENUE, ("Revenue",), (PRIVATE,)),
    Measure("cogs", ("COGS",), ("COGS",), COST_OF_SALES, ("COGS", "Cost of sales"), (PRIVATE,)),
    Measure("opex", ("opex",), ("OPEX",), OPEX, ("OPEX", "Operating expenses"), (PRIVATE,)),
    Measure(
        "sga",
        ("SG&A",),
        ("SG&A expenses",),
        "report_item_code IN ('SELL_EXP', 'ADMIN_EXP')",
        ("SG&A", "SG&A items"),
        (PRIVATE,),
    ),
    Measure("rnd", ("R&D spend",), ("R&D expenses",), "report_item_code = 'RND_EXP'", ("R&D",)),
    Measure(
        "vehicle_revenue",
        ("vehicle sales revenue",),
        ("vehicle sales revenue",),
        "report_item_code = 'REV_VEH'",
    ),
)


def use_measure(ask: Ask, measures: tuple[Measure, ...] = MEASURES) -> tuple[Measure, str]:
    """Picks a measure and its wording, recording what that wording needs."""
    measure = ask.pick(measures)
    ask.need(*measure.traits, knowledge=measure.knowledge)
    return measure, ask.pick(measure.terse if ask.terse else measure.precise)


def place(country: Country) -> str:
    """A country as it reads in a sentence: "the United Kingdom", "Germany"."""
    return f"the {country.name}" if country.name.startswith("United ") else country.name


def case_sum(condition: str, column: str) -> str:
    """``SUM(CASE WHEN <condition> THEN <column> ELSE 0 END)``."""
    return f"SUM(CASE WHEN {condition} THEN {column} ELSE 0 END)"


def sentence(text: str) -> str:
    """Tidies a question assembled from parts: spacing, punctuation, first letter."""
    text = " ".join(text.split())
    for before, after in ((" ?", "?"), (" ,", ","), ("( ", "("), (" )", ")")):
        text = text.replace(before, after)
    return text[0].upper() + text[1:]


def conditions(*parts: str) -> str:
    """``WHERE a AND b`` over the non-empty parts."""
    return "WHERE " + " AND ".join(p for p in parts if p)
