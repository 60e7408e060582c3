"""The planted patterns measured in a generated AutoFin database: ``planted.json``.

:func:`planted_facts` reads the SQLite file with SQL (nothing is taken from the generator's
parameters but the scopes to look at), so every number in the file is true of the data.
Each pattern says whether it ``holds`` there: the margin drop's region and region x model
segment top the decomposition of the gross-profit change (against the previous quarter and the
same quarter a year earlier), the peak month is each year's top month, the
trend is significant, the deep band has the lowest volume growth, price realisation and
gross margin.

Measures (caliber A, USD): revenue = report-item level 1 ``Revenue``; gross profit = revenue
minus ``Cost of sales``; gross margin = gross profit / revenue.
"""

from __future__ import annotations

import math
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np
import statsmodels.api as sm

from bench.autofin import calendar as cal
from bench.autofin import plants
from bench.autofin.catalog import brand, model, region

PLANTED_FILE = "planted.json"
SIGN = "CASE report_item_level1 WHEN 'Revenue' THEN 1.0 WHEN 'Cost of sales' THEN -1.0 ELSE 0 END"
REVENUE = "SUM(CASE WHEN report_item_level1 = 'Revenue' THEN ptd_amt_usd ELSE 0 END)"
GROSS_PROFIT = f"SUM(({SIGN}) * ptd_amt_usd)"
TREND_SQL = (
    "SELECT period, {revenue} FROM {table} WHERE caliber = 'A' AND region_code = ? "
    "AND period >= ? GROUP BY period ORDER BY period"
)


def planted_facts(database: Path | str, seed: int) -> dict[str, Any]:
    """Every planted pattern's facts, measured in the SQLite file ``database``."""
    uri = f"{Path(database).resolve().as_uri()}?mode=ro"
    with closing(sqlite3.connect(uri, uri=True)) as db:
        return {
            "database": "autofin",
            "seed": seed,
            "measures": {
                "revenue": "report_item_level1 = 'Revenue', caliber A, ptd_amt_usd",
                "gross_profit": "revenue minus report_item_level1 = 'Cost of sales'",
                "gross_margin_pct": "gross profit / revenue * 100",
            },
            "margin_drop": margin_drop_facts(db),
            "seasonal_peak": seasonal_peak_facts(db),
            "trend": trend_facts(db),
            "deep_discount": deep_discount_facts(db),
        }


def _r(value: float | None, digits: int = 2) -> float | None:
    return None if value is None or not math.isfinite(value) else round(float(value), digits)


def _in(periods: list[str]) -> str:
    return "(" + ", ".join(f"'{p}'" for p in periods) + ")"


def _margin(db: sqlite3.Connection, table: str, periods: list[str], where: str = "1") -> float:
    gross, revenue = db.execute(
        f"SELECT {GROSS_PROFIT}, {REVENUE} FROM {table} WHERE caliber = 'A' "
        f"AND period IN {_in(periods)} AND {where}"
    ).fetchone()
    return 100.0 * gross / revenue


def _profit_change(
    db: sqlite3.Connection, table: str, dimension: str, now: list[str], before: list[str]
) -> dict[str, float]:
    rows = db.execute(
        f"SELECT {dimension}, SUM(CASE WHEN period IN {_in(now)} THEN ({SIGN}) * ptd_amt_usd "
        f"ELSE 0 END) - SUM(CASE WHEN period IN {_in(before)} THEN ({SIGN}) * ptd_amt_usd "
        f"ELSE 0 END) AS change FROM {table} WHERE caliber = 'A' GROUP BY {dimension} "
        "ORDER BY change"
    ).fetchall()
    return {key: round(change, 2) for key, change in rows}


def margin_drop_facts(db: sqlite3.Connection) -> dict[str, Any]:
    plant = plants.MARGIN_DROP
    table = brand(plant.brand).income_table
    before_year = cal.span(cal.shift(plant.periods[0], -12), cal.shift(plant.periods[0], -1))
    (model_hit,) = db.execute(
        f"SELECT model_code FROM {table} WHERE caliber = 'A' AND report_item_code = 'REV_VEH' "
        f"AND region_code = ? AND period IN {_in(before_year)} GROUP BY model_code "
        "ORDER BY SUM(ptd_amt_usd) DESC LIMIT 1",
        (plant.region,),
    ).fetchone()
    now, before = plant.periods, plant.previous_periods
    last_year = [cal.shift(p, -12) for p in now]
    segment = f"region_code = '{plant.region}' AND model_code = '{model_hit}'"
    pair = "region_code || '/' || model_code"
    changes = {
        name: {
            "by_region": _profit_change(db, table, "region_code", now, then),
            "by_model": _profit_change(db, table, "model_code", now, then),
            "by_region_model": dict(list(_profit_change(db, table, pair, now, then).items())[:5]),
        }
        for name, then in (("vs_previous_quarter", before), ("vs_last_year", last_year))
    }
    margins = {
        "previous_quarter": _r(_margin(db, table, before)),
        "quarter": _r(_margin(db, table, now)),
        "same_quarter_last_year": _r(_margin(db, table, last_year)),
    }
    segment_margins = {
        "previous_quarter": _r(_margin(db, table, before, segment)),
        "quarter": _r(_margin(db, table, now, segment)),
    }
    tops = [next(iter(c[k])) for c in changes.values() for k in ("by_region", "by_region_model")]
    expected = [plant.region, f"{plant.region}/{model_hit}"] * 2
    return {
        "brand": plant.brand,
        "brand_name": brand(plant.brand).name,
        "table": table,
        "fiscal_year": cal.fiscal_year_label(plant.quarter_end),
        "quarter": cal.quarter_label(plant.quarter_end),
        "periods": now,
        "previous_periods": before,
        "region": plant.region,
        "region_name": region(plant.region).name,
        "model": model_hit,
        "model_name": model(model_hit).name,
        "gross_margin_pct": margins,
        "segment_gross_margin_pct": segment_margins,
        "gross_profit_change": changes,
        "holds": (
            tops == expected
            and margins["quarter"]
            < min(margins["previous_quarter"], margins["same_quarter_last_year"])
            and segment_margins["quarter"] < segment_margins["previous_quarter"]
        ),
    }


def seasonal_peak_facts(db: sqlite3.Connection) -> dict[str, Any]:
    plant = plants.SEASONAL_PEAK
    table = brand(plant.brand).income_table
    rows = db.execute(
        f"SELECT period, {REVENUE} FROM {table} WHERE caliber = 'A' GROUP BY period ORDER BY period"
    ).fetchall()
    by_year: dict[str, dict[str, float]] = {}
    for period, revenue in rows:
        by_year.setdefault(period[:4], {})[period[4:]] = revenue
    peaks = {year: max(months, key=months.__getitem__) for year, months in by_year.items()}
    mean_by_month = {
        month: _r(float(np.mean([months[month] for months in by_year.values()])))
        for month in sorted(next(iter(by_year.values())))
    }
    overall = float(np.mean([v for _, v in rows]))
    peak_month = max(mean_by_month, key=lambda m: mean_by_month[m] or 0.0)
    return {
        "brand": plant.brand,
        "brand_name": brand(plant.brand).name,
        "table": table,
        "month": int(peak_month),
        "month_name": cal.MONTH_NAMES[int(peak_month) - 1],
        "peak_month_by_year": {year: int(month) for year, month in peaks.items()},
        "mean_revenue_by_month": mean_by_month,
        "peak_to_mean_ratio": _r((mean_by_month[peak_month] or 0.0) / overall, 3),
        "holds": int(peak_month) == plant.month
        and all(int(m) == plant.month for m in peaks.values()),
    }


def trend_facts(db: sqlite3.Connection) -> dict[str, Any]:
    """The trend's monthly revenue, a log-linear fit on it and the next month's forecast with
    its prediction interval (statsmodels OLS)."""
    plant = plants.TREND
    table = brand(plant.brand).income_table
    rows = db.execute(
        TREND_SQL.format(revenue=REVENUE, table=table), (plant.region, plant.history_from)
    ).fetchall()
    periods = [p for p, _ in rows]
    values = np.array([v for _, v in rows], dtype=float)
    t = np.arange(len(values), dtype=float)
    fit = sm.OLS(np.log(values), sm.add_constant(t)).fit()
    frame = fit.get_prediction(np.array([[1.0, float(len(values))]])).summary_frame(
        alpha=1 - plant.level
    )
    point = math.exp(float(frame["mean"].iloc[0]))
    lower = math.exp(float(frame["obs_ci_lower"].iloc[0]))
    upper = math.exp(float(frame["obs_ci_upper"].iloc[0]))
    last_year = values[-12:].sum() / values[-24:-12].sum() - 1
    return {
        "brand": plant.brand,
        "brand_name": brand(plant.brand).name,
        "table": table,
        "region": plant.region,
        "region_name": region(plant.region).name,
        "measure": "monthly revenue (caliber A, USD)",
        "history": {"first": periods[0], "last": periods[-1], "months": len(periods)},
        "last_value": _r(values[-1]),
        "monthly_growth_pct": _r(100 * (math.exp(float(fit.params[1])) - 1), 3),
        "annual_growth_pct": _r(100 * (math.exp(12 * float(fit.params[1])) - 1)),
        "last_12_months_growth_pct": _r(100 * last_year),
        "slope_p_value": float(f"{fit.pvalues[1]:.3g}"),
        "r_squared": _r(fit.rsquared, 4),
        "forecast": {
            "period": cal.shift(periods[-1], 1),
            "value": _r(point),
            "lower": _r(lower),
            "upper": _r(upper),
            "level": plant.level,
            "method": "OLS of log monthly revenue on time, prediction interval",
        },
        "holds": bool(fit.params[1] > 0 and fit.pvalues[1] < 0.001 and last_year > 0),
    }


def _band_sql() -> str:
    cases = " ".join(
        f"WHEN discount_usd / gross_sales_usd < {high} THEN '{name}'"
        for _, high, name in plants.DISCOUNT_BANDS
    )
    return f"CASE {cases} ELSE 'other' END"


def deep_discount_facts(db: sqlite3.Connection) -> dict[str, Any]:
    """Per discount band of the brand's non-HQ invoices: count, units, units per invoice,
    units growth from 2021 to 2025, price realisation (net sales / units x list price); and
    the gross margin of the deep-discount customers against the brand's other customers."""
    plant = plants.DEEP_DISCOUNT
    table = brand(plant.brand).ledger_table
    rows = db.execute(
        f"SELECT {_band_sql()} AS band, COUNT(*), SUM(units), "
        "SUM(CASE WHEN period LIKE '2021%' THEN units ELSE 0 END), "
        "SUM(CASE WHEN period LIKE '2025%' THEN units ELSE 0 END), "
        "SUM(net_sales_usd) / SUM(units * list_price_usd), AVG(discount_usd / gross_sales_usd) "
        f"FROM {table} WHERE region_code <> 'HQ' GROUP BY band"
    ).fetchall()
    bands = {
        band: {
            "invoices": count,
            "units": units,
            "units_per_invoice": _r(units / count),
            "units_growth_2021_2025_pct": _r(100 * (last / first - 1)),
            "price_realisation_pct": _r(100 * realisation),
            "mean_discount_pct": _r(100 * discount),
        }
        for band, count, units, first, last, realisation, discount in rows
    }
    bands = {name: bands[name] for _, _, name in plants.DISCOUNT_BANDS if name in bands}
    income = brand(plant.brand).income_table
    groups = [
        g for g, kind in (("CG_FLEETONE", "fleet"), ("CG_PUBLIC", "public")) if kind in plant.kinds
    ]
    deep = f"region_code <> 'HQ' AND customer_group_code IN {_in(groups)}"
    others = f"region_code <> 'HQ' AND customer_group_code NOT IN {_in(groups)}"
    year = cal.span("202501", "202512")
    margins = {
        "deep_discount_customers": _r(_margin(db, income, year, deep)),
        "other_customers": _r(_margin(db, income, year, others)),
    }
    band = plant.band
    rest = [b for name, b in bands.items() if name != band]
    holds = (
        band in bands
        and all(
            bands[band][key] < min(b[key] for b in rest)
            for key in ("units_growth_2021_2025_pct", "price_realisation_pct")
        )
        and margins["deep_discount_customers"] < margins["other_customers"]
    )
    return {
        "brand": plant.brand,
        "brand_name": brand(plant.brand).name,
        "table": table,
        "band": band,
        "band_low_pct": _r(plant.low * 100),
        "band_high_pct": _r(plant.high * 100),
        "customer_groups": groups,
        "bands": bands,
        "gross_margin_2025_pct": margins,
        "holds": bool(holds),
    }
