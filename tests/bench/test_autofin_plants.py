"""Specification of the planted AutoFin patterns (`bench.autofin.plants`), their measured facts
(`bench.autofin.planted`, ``planted.json``) and the long-form questions built on them
(`bench.autofin.longform`).

One build (seed 7) per module; every pattern is recomputed here with SQL of its own, and the
facts file must equal a fresh measurement of the database.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections import Counter
from collections.abc import Iterator
from contextlib import closing

import numpy as np
import pytest
import statsmodels.api as sm

from bench.autofin import plants
from bench.autofin.__main__ import main
from bench.autofin.longform import TYPES
from bench.autofin.longform_score import score
from bench.autofin.pipeline import Summary
from bench.autofin.planted import planted_facts
from bench.judge.answers import read_analysis_answers

pytestmark = pytest.mark.slow
SEED = 7
GM = (
    "SUM(CASE report_item_level1 WHEN 'Revenue' THEN ptd_amt_usd "
    "WHEN 'Cost of sales' THEN -ptd_amt_usd ELSE 0 END)"
)
REV = "SUM(CASE WHEN report_item_level1 = 'Revenue' THEN ptd_amt_usd ELSE 0 END)"


@pytest.fixture(scope="module")
def db(built: Summary) -> Iterator[sqlite3.Connection]:
    uri = f"{(built.out / 'autofin.sqlite').as_uri()}?mode=ro"
    with closing(sqlite3.connect(uri, uri=True)) as connection:
        yield connection


@pytest.fixture(scope="module")
def facts(built: Summary) -> dict:
    return json.loads((built.out / "planted.json").read_text(encoding="utf-8"))


def margin(db: sqlite3.Connection, first: str, last: str, where: str = "1") -> float:
    gross, revenue = db.execute(
        f"SELECT {GM}, {REV} FROM income_aurora WHERE caliber = 'A' "
        f"AND period BETWEEN '{first}' AND '{last}' AND {where}"
    ).fetchone()
    return 100 * gross / revenue


def test_the_facts_file_is_a_measurement_of_the_data_and_every_pattern_holds(
    built: Summary, facts: dict
) -> None:
    assert facts == json.loads(json.dumps(planted_facts(built.out / "autofin.sqlite", SEED)))
    for name in ("margin_drop", "seasonal_peak", "trend", "deep_discount"):
        assert facts[name]["holds"] is True, name
    assert built.manifest["files"]["planted"] == "planted.json"


def test_aurora_margin_drops_in_one_quarter_driven_by_one_region_and_model(
    db: sqlite3.Connection, facts: dict
) -> None:
    drop = facts["margin_drop"]
    assert (drop["region"], drop["model"]) == ("EUR", "AU5")
    quarter = margin(db, "202407", "202409")
    assert quarter < margin(db, "202404", "202406") - 1.5
    assert quarter < margin(db, "202307", "202309") - 1.0
    assert drop["gross_margin_pct"]["quarter"] == pytest.approx(quarter, abs=0.01)
    segment = "region_code = 'EUR' AND model_code = 'AU5'"
    assert (
        margin(db, "202407", "202409", segment) < 10 < 20 < margin(db, "202404", "202406", segment)
    )
    assert margin(db, "202410", "202412", segment) > 20  # one quarter only
    for dimension, top in (("region_code", "EUR"), ("model_code", "AU5")):
        worst = db.execute(
            f"SELECT {dimension} FROM income_aurora WHERE caliber = 'A' GROUP BY {dimension} "
            f"ORDER BY SUM(CASE WHEN period BETWEEN '202407' AND '202409' THEN 1 "
            f"WHEN period BETWEEN '202404' AND '202406' THEN -1 ELSE 0 END * "
            "CASE report_item_level1 WHEN 'Revenue' THEN ptd_amt_usd "
            "WHEN 'Cost of sales' THEN -ptd_amt_usd ELSE 0 END) LIMIT 1"
        ).fetchone()[0]
        assert worst == top


def test_helix_peaks_in_november_every_year_and_other_brands_do_not(
    db: sqlite3.Connection, facts: dict
) -> None:
    def peaks(table: str) -> list[str]:
        rows = db.execute(
            f"SELECT substr(period, 1, 4) AS y, substr(period, 5, 2) AS m, {REV} AS revenue "
            f"FROM {table} WHERE caliber = 'A' GROUP BY period ORDER BY y, revenue DESC"
        ).fetchall()
        return [next(m for y2, m, _ in rows if y2 == y) for y in sorted({r[0] for r in rows})]

    assert peaks("income_helix") == ["11"] * 6
    assert peaks("income_nova").count("11") < 6
    assert (
        facts["seasonal_peak"]["month"] == 11 and facts["seasonal_peak"]["month_name"] == "November"
    )


def test_zephyr_europe_trend_is_forecastable_on_a_held_out_month(
    db: sqlite3.Connection, facts: dict
) -> None:
    values = np.array(
        [
            v
            for (v,) in db.execute(
                f"SELECT {REV} FROM income_zephyr WHERE caliber = 'A' AND region_code = 'EUR' "
                "AND period >= '202101' GROUP BY period ORDER BY period"
            )
        ]
    )
    yearly = values.reshape(5, 12).sum(axis=1)
    assert all(np.diff(yearly) > 0)
    # fitted without December 2025, the 95 % interval covers December 2025
    t = np.arange(len(values) - 1, dtype=float)
    fit = sm.OLS(np.log(values[:-1]), sm.add_constant(t)).fit()
    frame = fit.get_prediction(np.array([[1.0, float(len(t))]])).summary_frame(alpha=0.05)
    low, high = (math.exp(frame[c].iloc[0]) for c in ("obs_ci_lower", "obs_ci_upper"))
    assert low <= values[-1] <= high and high / low < 1.5
    forecast = facts["trend"]["forecast"]
    assert forecast["period"] == "202601"
    assert forecast["lower"] < forecast["value"] < forecast["upper"]
    assert forecast["lower"] < values[-1] * math.exp(fit.params[1]) < forecast["upper"]


def test_titan_deep_discount_band_buys_no_volume_and_costs_margin(
    db: sqlite3.Connection, facts: dict
) -> None:
    rate = "discount_usd / gross_sales_usd"
    deep = "customer_group_code IN ('CG_FLEETONE', 'CG_PUBLIC') AND region_code <> 'HQ'"
    low, high = db.execute(
        f"SELECT MIN({rate}), MAX({rate}) FROM sales_ledger_titan WHERE {deep}"
    ).fetchone()
    assert low >= 0.15 and high < 0.20
    assert (
        db.execute(f"SELECT MAX({rate}) FROM sales_ledger_titan WHERE NOT ({deep})").fetchone()[0]
        < 0.125
    )
    assert db.execute(f"SELECT MAX({rate}) FROM sales_ledger_nova").fetchone()[0] < 0.125
    growth = dict(
        db.execute(
            f"SELECT {deep} AS d, SUM(CASE WHEN period LIKE '2025%' THEN units END) * 1.0 / "
            "SUM(CASE WHEN period LIKE '2021%' THEN units END) FROM sales_ledger_titan "
            "WHERE region_code <> 'HQ' GROUP BY d"
        ).fetchall()
    )
    assert growth[1] < 1.0 < growth[0]
    band = facts["deep_discount"]
    assert band["band"] == "15-20%" and set(band["bands"]) == {b[2] for b in plants.DISCOUNT_BANDS}
    margins = band["gross_margin_2025_pct"]
    assert margins["deep_discount_customers"] < margins["other_customers"] - 5


def test_longform_questions_cover_four_types_with_references(
    built: Summary, facts: dict, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["longform", "--out", str(built.out)]) == 0
    assert "15 long-form questions" in capsys.readouterr().out
    path = built.out / "longform.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    counts = Counter(row["type"] for row in rows)
    assert set(counts) == set(TYPES) and min(counts.values()) >= 3
    kinds = {row["expects"]["kind"] for row in rows}
    assert kinds == {"driver", "peak_month", "trend_up", "forecast", "discount_band"}
    assert len({row["id"] for row in rows}) == len(rows)
    for row in rows:
        assert row["reference"] and row["question"].endswith(("?", "."))
    # the judge reads them as analysis answers, reference and database kept
    read = read_analysis_answers(path)
    assert read[0].reference == rows[0]["reference"]
    assert read[0].database is not None and read[0].database.is_file()
    # a reference answer names its own planted fact
    references = [{"id": r["id"], "short_answer": r["reference"]} for r in rows]
    assert all(v.found for v in score(rows, references)), score(rows, references)
