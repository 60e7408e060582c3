"""Long-form AutoFin questions (descriptive, diagnostic, predictive, prescriptive) whose
answers are the planted patterns (``planted.json``, :mod:`bench.autofin.planted`).

Each question is a JSON line in the shape ``bench.judge.answers`` reads analysis answers in
(``id``, ``question``, ``type``, ``reference``, ``database``) plus ``expects``: the planted
fact a right answer names, which :mod:`bench.autofin.longform_score` checks:

- ``driver``: the region and model behind the margin drop;
- ``peak_month``: the seasonal peak's calendar month;
- ``trend_up``: the planted series grows;
- ``forecast``: the next month's value inside the planted interval (in US dollars, as the
  three forecast questions say: the planted series is the USD one);
- ``discount_band``: the discount band that does not pay.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.autofin import calendar as cal

LONGFORM_FILE = "longform.jsonl"
TYPES = ("descriptive", "diagnostic", "predictive", "prescriptive")


def _money(value: float) -> str:
    return f"USD {value / 1e6:,.1f} million"


def _quarter(drop: dict[str, Any]) -> str:
    first, last = drop["periods"][0], drop["periods"][-1]
    months = f"{cal.month_label(first).split()[0]}-{cal.month_label(last)}"
    return f"{drop['fiscal_year']} {drop['quarter']} ({months})"


def _driver(drop: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "driver",
        "brand": drop["brand"],
        "region": drop["region"],
        "model": drop["model"],
    }


def _margin_reference(drop: dict[str, Any]) -> str:
    margins, segment = drop["gross_margin_pct"], drop["segment_gross_margin_pct"]
    change = drop["gross_profit_change"]["vs_previous_quarter"]
    region_change = change["by_region"][drop["region"]]
    segment_change = change["by_region_model"][f"{drop['region']}/{drop['model']}"]
    return (
        f"{drop['brand_name']}'s gross margin fell from {margins['previous_quarter']:g}% in the "
        f"previous quarter (and {margins['same_quarter_last_year']:g}% a year earlier) to "
        f"{margins['quarter']:g}% in {_quarter(drop)}. The drop is driven by "
        f"{drop['model_name']} ({drop['model']}) in {drop['region_name']} ({drop['region']}): "
        f"that segment's gross margin fell from {segment['previous_quarter']:g}% to "
        f"{segment['quarter']:g}% (lower price, higher vehicle cost); {drop['region_name']} "
        f"accounts for {_money(region_change)} and {drop['model_name']} there for "
        f"{_money(segment_change)} of the gross-profit change against the previous quarter, "
        "the largest of any region and of any region and model."
    )


def _peak_reference(peak: dict[str, Any]) -> str:
    years = ", ".join(sorted(peak["peak_month_by_year"]))
    mean = peak["mean_revenue_by_month"][f"{peak['month']:02d}"]
    return (
        f"{peak['brand_name']}'s revenue peaks in {peak['month_name']} every year ({years}): "
        f"the {peak['month_name']} average is {_money(mean)}, "
        f"{peak['peak_to_mean_ratio']:g} times the average month."
    )


def _trend_reference(trend: dict[str, Any]) -> str:
    forecast = trend["forecast"]
    return (
        f"{trend['brand_name']}'s monthly revenue in {trend['region_name']} has grown steadily "
        f"since {cal.month_label(trend['history']['first'])} (about "
        f"{trend['monthly_growth_pct']:g}% a month, {trend['annual_growth_pct']:g}% a year; "
        f"{_money(trend['last_value'])} in {cal.month_label(trend['history']['last'])}). "
        f"The forecast for {cal.month_label(forecast['period'])} is {_money(forecast['value'])} "
        f"({forecast['level'] * 100:g}% interval {_money(forecast['lower'])} to "
        f"{_money(forecast['upper'])})."
    )


def _discount_reference(deep: dict[str, Any]) -> str:
    band = deep["bands"][deep["band"]]
    others = {name: b for name, b in deep["bands"].items() if name != deep["band"]}
    growth = ", ".join(f"{b['units_growth_2021_2025_pct']:+g}%" for b in others.values())
    margins = deep["gross_margin_2025_pct"]
    return (
        f"{deep['brand_name']}'s {deep['band']} discount band does not pay: its invoices "
        f"(fleet and public-sector customers) sold {band['units_growth_2021_2025_pct']:+g}% units "
        f"from 2021 to 2025 against {growth} for the lower bands, "
        f"{band['units_per_invoice']:g} units per invoice, realise "
        f"{band['price_realisation_pct']:g}% of list price, and those customers' gross "
        "margin in 2025 was "
        f"{margins['deep_discount_customers']:g}% against {margins['other_customers']:g}% for "
        "the others. The deeper discount buys no volume and costs margin: cut it."
    )


def longform_questions(facts: dict[str, Any], database: str) -> list[dict[str, Any]]:
    """The question set for one build's planted facts; ``database`` is written into each."""
    drop, peak = facts["margin_drop"], facts["seasonal_peak"]
    trend, deep = facts["trend"], facts["deep_discount"]
    quarter = _quarter(drop)
    au, hx = drop["brand_name"], peak["brand_name"]
    zp, ti = trend["brand_name"], deep["brand_name"]
    where = trend["region_name"]
    next_month = cal.month_label(trend["forecast"]["period"])
    driver, margin = _driver(drop), _margin_reference(drop)
    season = {"kind": "peak_month", "brand": peak["brand"], "month": peak["month"]}
    forecast = {
        "kind": "forecast",
        "brand": trend["brand"],
        "region": trend["region"],
        "period": trend["forecast"]["period"],
        "value": trend["forecast"]["value"],
        "lower": trend["forecast"]["lower"],
        "upper": trend["forecast"]["upper"],
    }
    growing = {"kind": "trend_up", "brand": trend["brand"], "region": trend["region"]}
    band = {
        "kind": "discount_band",
        "brand": deep["brand"],
        "band": deep["band"],
        "low_pct": deep["band_low_pct"],
        "high_pct": deep["band_high_pct"],
    }
    rows: list[tuple[str, str, dict[str, Any], str]] = [
        (
            "descriptive",
            f"How did {au}'s gross margin develop by region and model in {quarter}?",
            driver,
            margin,
        ),
        (
            "descriptive",
            f"Describe {hx}'s monthly revenue over the years: when is it highest?",
            season,
            _peak_reference(peak),
        ),
        (
            "descriptive",
            f"How has {zp}'s revenue in {where} developed since 2021?",
            growing,
            _trend_reference(trend),
        ),
        (
            "descriptive",
            f"Summarise {ti}'s sales invoices by discount band: units, growth and "
            "price realisation.",
            band,
            _discount_reference(deep),
        ),
        ("diagnostic", f"Why did {au}'s gross margin fall in {quarter}?", driver, margin),
        (
            "diagnostic",
            f"Which region and which model drove the drop in {au}'s gross profit "
            f"in {quarter} compared with the quarter before?",
            driver,
            margin,
        ),
        (
            "diagnostic",
            f"What explains {au}'s weaker gross margin in {quarter} compared with a year earlier?",
            driver,
            margin,
        ),
        (
            "predictive",
            f"What will {zp}'s monthly revenue in {where} be in {next_month}, in US dollars?",
            forecast,
            _trend_reference(trend),
        ),
        (
            "predictive",
            f"Forecast {zp}'s revenue in {where} in US dollars for next month, with an interval.",
            forecast,
            _trend_reference(trend),
        ),
        (
            "predictive",
            f"If the trend continues, how much revenue in US dollars will {zp} make in "
            f"{where} in the month after the latest data?",
            forecast,
            _trend_reference(trend),
        ),
        (
            "predictive",
            f"In which month of next year should we expect {hx}'s revenue to peak?",
            season,
            _peak_reference(peak),
        ),
        ("prescriptive", f"Where should {ti} cut discounts?", band, _discount_reference(deep)),
        (
            "prescriptive",
            f"Which discount band of {ti} does not pay off, and what should we do about it?",
            band,
            _discount_reference(deep),
        ),
        (
            "prescriptive",
            f"Do {ti}'s deepest discounts buy extra volume? Recommend a discount policy.",
            band,
            _discount_reference(deep),
        ),
        (
            "prescriptive",
            f"In which month should {hx} plan extra production and stock every year?",
            season,
            _peak_reference(peak),
        ),
    ]
    return [
        {
            "id": f"autofin-lf-{number:02d}",
            "question": question,
            "type": kind,
            "reference": reference,
            "database": database,
            "expects": expects,
        }
        for number, (kind, question, expects, reference) in enumerate(rows, start=1)
    ]


def write_longform(folder: Path | str, out: Path | str | None = None) -> Path:
    """Writes the long-form questions of the AutoFin build in ``folder`` (its
    ``planted.json``) to ``out`` (default ``folder/longform.jsonl``); ``database`` is the
    absolute path of the build's SQLite file."""
    from bench.autofin.pipeline import SQLITE_FILE
    from bench.autofin.planted import PLANTED_FILE

    folder = Path(folder)
    facts_path = folder / PLANTED_FILE
    if not facts_path.is_file():
        raise FileNotFoundError(f"no {PLANTED_FILE} in {folder}: generate AutoFin there first")
    facts = json.loads(facts_path.read_text(encoding="utf-8"))
    questions = longform_questions(facts, str((folder / SQLITE_FILE).resolve()))
    path = Path(out) if out else folder / LONGFORM_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in questions)
    path.write_text(text, encoding="utf-8", newline="\n")
    return path
