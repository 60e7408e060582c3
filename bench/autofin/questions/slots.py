"""What a question template fills in: time window, brand, currency, caliber, table columns.

An `Ask` is one question being written: the asker's profile and query time, the phrasing style
(terse executive or precise analyst) and a private random stream. Each slot method picks how the
question says something (or leaves it unsaid), returns what the gold SQL needs, and records the
traits and knowledge-pack entries that this choice makes necessary.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bench.autofin import calendar as cal
from bench.autofin import rules as R
from bench.autofin.catalog import BRANDS, REPORTING_CURRENCIES, Brand, brand
from bench.autofin.knowledge import CALIBER_ALIASES
from bench.autofin.schema import amount_column
from bench.autofin.world import World

IMPLICIT = "implicit_intent"
PRIVATE = "private_domain_knowledge"
WIDE = "wide_tables"
CONTEXT = "context_sensitivity"
TRAITS = (IMPLICIT, PRIVATE, WIDE, CONTEXT)

CURRENCY_WORDS = {
    "USD": "US dollars",
    "EUR": "euros",
    "CNY": "yuan",
    "JPY": "yen",
    "GBP": "pounds",
}
# window name -> (weight when terse, weight when precise)
WINDOW_WEIGHTS = {
    "default": (4, 0),
    "this_month": (3, 1),
    "last_month": (3, 2),
    "ytd": (3, 2),
    "last_year": (1, 1),
    "qtd": (1, 1),
    "last_quarter": (1, 1),
    "month": (1, 4),
    "fy": (1, 2),
    "quarter": (0.5, 2),
}
MONTHLY = ("default", "this_month", "last_month", "month")
NO_QUARTERS = ("default", "this_month", "last_month", "month", "ytd", "last_year", "fy")
RELATIVE = ("default", "this_month", "last_month", "ytd", "last_year", "qtd", "last_quarter")
FISCAL = ("last_year", "last_quarter", "fy", "quarter")  # need the fiscal calendar to resolve


@dataclass(frozen=True)
class Window:
    """A time window: the figure is ``<kind>_amt_*`` of ``period``; it covers first..period."""

    name: str
    kind: str  # ptd | qtd | ytd
    period: str
    first: str
    phrase: str

    @property
    def filter(self) -> str:
        """Rows of a table that has only per-month amounts (ledgers): the months covered."""
        if self.first == self.period:
            return f"period = '{self.period}'"
        return f"period BETWEEN '{self.first}' AND '{self.period}'"


@dataclass(frozen=True)
class Who:
    """How a question names a brand, or the asker's own brand ("our"): as a modifier ``adj``
    ("Nova" / "our"), possessive ``poss`` ("Nova's" / "our"), object ``obj`` ("Nova" / "our
    brand") and subject ``subj`` ("Nova" / "we")."""

    brand: Brand
    own: bool = False

    @property
    def adj(self) -> str:
        return "our" if self.own else self.brand.name

    @property
    def poss(self) -> str:
        return "our" if self.own else f"{self.brand.name}'s"

    @property
    def obj(self) -> str:
        return "our brand" if self.own else self.brand.name

    @property
    def subj(self) -> str:
        return "we" if self.own else self.brand.name


@dataclass
class Ask:
    rng: random.Random
    world: World
    profile: dict[str, Any]
    query_time: datetime
    terse: bool
    traits: set[str] = field(default_factory=set)
    knowledge: list[str] = field(default_factory=list)
    columns: set[str] = field(default_factory=set)
    wide: bool = False

    # ------------------------------------------------------------------ basics
    @property
    def reporting(self) -> str:
        return cal.reporting_period(self.query_time)

    def need(self, *traits: str, knowledge: Sequence[str] = ()) -> None:
        self.traits.update(traits)
        for name in knowledge:
            if name not in self.knowledge:
                self.knowledge.append(name)

    def chance(self, probability: float) -> bool:
        return self.rng.random() < probability

    def pick(self, options: Sequence[Any]) -> Any:
        return options[self.rng.randrange(len(options))]

    def say(self, terse: str | Sequence[str], precise: str | Sequence[str]) -> str:
        """One phrasing for the question's style."""
        options = terse if self.terse else precise
        return options if isinstance(options, str) else self.pick(options)

    # ------------------------------------------------------------------- tables
    def table(self, name: str) -> str:
        if name.startswith(("income_", "sales_ledger_")):
            self.wide = True
        return name

    def amount(self, kind: str, currency: str, *, py: bool = False) -> str:
        return self.column(amount_column(kind, currency, prior_year=py))

    def qty(self, kind: str, *, py: bool = False) -> str:
        return self.column(f"{kind}_qty{'_py' if py else ''}")

    def column(self, name: str) -> str:
        self.columns.add(name)
        return name

    def finish(self) -> set[str]:
        """The traits, adding wide_tables when a wide table is read beyond ``ptd_amt_usd``."""
        if self.wide and self.columns - {"ptd_amt_usd"}:
            self.traits.add(WIDE)
        return set(self.traits)

    # -------------------------------------------------------------------- slots
    def brand(self, *, allow_own: bool = True) -> Who:
        department = self.profile["department"]
        if allow_own and department != "ALL" and self.chance(0.35):
            self.need(CONTEXT, knowledge=[R.OWN_BRAND])
            return Who(brand(department), own=True)
        return Who(self.pick(BRANDS))

    def currency(self) -> tuple[str, str]:
        """(currency code, phrase such as ``" in euros"`` or ``""`` when left to the profile)."""
        if self.chance(0.1 if self.terse else 0.45):
            code = self.pick(REPORTING_CURRENCIES)
            return code, self.pick([f" in {code}", f" in {CURRENCY_WORDS[code]}"])
        code = self.profile["currency"]
        self.need(knowledge=[R.currency_rule_name(self.profile["region"])])
        if code != "USD":
            self.need(CONTEXT)
        return code, ""

    def caliber(self) -> tuple[str, str]:
        """(caliber, phrase such as ``" (statutory caliber)"`` or ``""``)."""
        self.need(knowledge=[R.ONE_CALIBER])
        if self.chance(0.05 if self.terse else 0.35):
            value = self.pick(("A", "B"))
            if self.chance(0.5):
                return value, f", caliber {value}"
            self.need(PRIVATE)
            return value, f" in the {self.pick(CALIBER_ALIASES[value][:2])}"
        value = self.profile["caliber"]
        self.need(knowledge=[R.caliber_rule_name(value)])
        if value != "A":
            self.need(CONTEXT)
        return value, ""

    def window(self, allowed: Sequence[str] = tuple(WINDOW_WEIGHTS)) -> Window:
        names = [n for n in allowed if WINDOW_WEIGHTS[n][0 if self.terse else 1] > 0]
        weights = [WINDOW_WEIGHTS[n][0 if self.terse else 1] for n in names]
        name = self.rng.choices(names, weights=weights)[0]
        phrase_seed = self.rng.random()
        window = _window(name, self.reporting, phrase_seed, self.terse)
        if name in RELATIVE:
            self.need(CONTEXT)
            calendar_month = cal.make_period(self.query_time.year, self.query_time.month)
            naive = _window(name, calendar_month, phrase_seed, self.terse)
            if (naive.kind, naive.period) != (window.kind, window.period):
                self.need(PRIVATE, knowledge=[R.REFRESH_EARLY])
        if name == "default":
            self.need(IMPLICIT, knowledge=[R.DEFAULT_PERIOD])
        if name in FISCAL:
            self.need(PRIVATE, knowledge=[R.FISCAL_CALENDAR])
        elif window.kind != "ptd":
            self.need(knowledge=[R.FISCAL_CALENDAR])
        return window


def _window(name: str, reporting: str, seed: float, terse: bool) -> Window:
    """The window ``name`` relative to the reporting period (phrases drawn from ``seed``)."""
    pick = random.Random(seed)

    def say(short: list[str], long: list[str]) -> str:
        return pick.choice(short if terse else long)

    if name in ("default", "this_month"):
        phrase = "" if name == "default" else say(["this month"], ["for the current month"])
        return Window(name, "ptd", reporting, reporting, phrase)
    if name == "last_month":
        period = cal.shift(reporting, -1)
        return Window(name, "ptd", period, period, say(["last month"], ["for the previous month"]))
    if name == "month":
        period = cal.shift(reporting, -pick.randrange(0, 18))
        phrase = pick.choice([f"in {cal.month_label(period)}", f"for period {period}"])
        return Window(name, "ptd", period, period, phrase)
    if name == "ytd":
        phrase = say(["YTD", "this year", "so far this year"], ["for the fiscal year to date"])
        return Window(name, "ytd", reporting, _fy_first(reporting), phrase)
    if name in ("last_year", "fy"):
        fiscal_year = cal.fiscal_year(reporting)
        year = fiscal_year - 1 if name == "last_year" else fiscal_year - pick.randrange(1, 4)
        period = cal.fiscal_year_end(year)
        phrase = say(["last year"], ["for the last fiscal year"])
        if name == "fy":
            phrase = pick.choice([f"in FY{year}", f"for fiscal year FY{year}"])
        return Window(name, "ytd", period, _fy_first(period), phrase)
    if name == "qtd":
        phrase = say(["this quarter", "QTD"], ["for the current fiscal quarter to date"])
        return Window(name, "qtd", reporting, cal.quarter_periods(reporting)[0], phrase)
    if name in ("last_quarter", "quarter"):
        back = 1 if name == "last_quarter" else pick.randrange(1, 6)
        period = cal.quarter_end(cal.shift(cal.quarter_periods(reporting)[0], -1 - 3 * (back - 1)))
        label = f"Q{cal.fiscal_quarter(period)} FY{cal.fiscal_year(period)}"
        phrase = say(["last quarter"], ["for the previous fiscal quarter"])
        if name == "quarter":
            phrase = f"in {label}"
        return Window(name, "qtd", period, cal.quarter_periods(period)[0], phrase)
    raise ValueError(f"unknown window {name!r}")


def _fy_first(period: str) -> str:
    return cal.fiscal_year_periods(cal.fiscal_year(period))[0]
