"""The analysis tools on known data: the planted driver, the injected outlier, the seasonal
series, the forecast covering a held-out point, the best option."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from agents.analysis.compute import compute_facts
from agents.analysis.models import Evidence
from agents.analysis.timeseries import coarse_periods, forecast, time_series, trend_seasonality
from agents.analysis.tools import (
    additive,
    aggregation,
    frame,
    outliers,
    period_change,
    rank_options,
    shares,
)

MONTHS = [str(p) for p in pd.period_range("2024-01", periods=12, freq="M")]


def monthly_sales(seed: int = 7) -> pd.DataFrame:
    """Monthly revenue of 4 regions x 3 models; in the last month East's Aurora drops by 80."""
    rng = np.random.default_rng(seed)
    rows = []
    for month in MONTHS:
        for region in ["North", "South", "East", "West"]:
            for model in ["Aurora", "Borealis", "Cirrus"]:
                value = 50 + rng.normal(0, 2)
                if month == MONTHS[-1] and (region, model) == ("East", "Aurora"):
                    value -= 40
                rows.append([month, region, model, round(value, 2)])
    return frame(["month", "region", "model", "revenue"], rows)


def test_frame_makes_numeric_columns_numeric():
    df = frame(["a", "b", "a"], [["x", "1", 2], ["y", "2.5", 3]])
    assert list(df.columns) == ["a", "b", "a_2"]
    assert df["b"].tolist() == [1.0, 2.5] and df["a"].tolist() == ["x", "y"]


@pytest.mark.parametrize(("dimension", "driver"), [("region", "East"), ("model", "Aurora")])
def test_period_change_finds_the_segment_that_drove_the_drop(dimension, driver):
    change = period_change(monthly_sales(), "month", "revenue", dimension)
    assert (change.previous_period, change.last_period) == ("2024-11", "2024-12")
    assert change.change < -25 and change.pct_change < 0
    top = change.contributions[0]
    assert top.segment == driver and top.share > 0.6
    assert all(c.share < 0.4 for c in change.contributions[1:])
    assert driver in change.summary() and len(change.contributions) in (3, 4)


def test_period_change_needs_two_periods():
    with pytest.raises(ValueError, match="two periods"):
        period_change(frame(["m", "v"], [["2024-01", 1]]), "m", "v")


def test_outliers_find_the_injected_point():
    rng = np.random.default_rng(3)
    values = 100 + rng.normal(0, 3, 30)
    values[17] = 160
    df = pd.DataFrame({"day": [f"d{i}" for i in range(30)], "orders": values})
    found = outliers(df, "orders", "day")
    assert [p.label for p in found.points] == ["d17"]
    assert found.points[0].zscore > 3 and found.count == 30
    assert outliers(df.drop(index=17), "orders", "day").points == []


def test_an_outlier_is_said_in_plain_words_with_its_numbers():
    rows = [["Hardware", 336], ["Network", 51], ["Software", 41], ["Database", 40]]
    rows += [["Inquiry", 32], ["Email", 35], ["Desk", 38], ["Phone", 36]]
    high = outliers(frame(["category", "incidents"], rows), "incidents", "category")
    text = high.summary()
    assert text.startswith("Hardware has a higher incidents than the others: 336 (z = ")
    assert text.endswith(f"; the mean of the 8 values is {high.mean:g}.")
    rows = [[f"store {i}", 100 + i] for i in range(12)] + [["store 12", 5]]
    low = outliers(frame(["store", "orders"], rows), "orders", "store").summary()
    assert low.startswith("store 12 has a lower orders than the others: 5 (z = -")


def seasonal_series(n: int = 48, seed: int = 1) -> pd.Series:
    """A monthly series: level 200, trend +2 a month, a yearly wave peaking in April."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    values = 200 + 2 * t + 30 * np.sin(2 * np.pi * t / 12) + rng.normal(0, 3, n)
    return pd.Series(values, index=pd.period_range("2021-01", periods=n, freq="M"))


def test_trend_and_seasonality_are_found_in_a_seasonal_series():
    found = trend_seasonality(seasonal_series())
    assert found.method == "stl" and found.period == 12
    assert found.direction == "up" and found.p_value < 0.001 and 1.5 < found.slope < 2.5
    assert found.seasonal_strength > 0.9 and found.peak_position == "April"
    assert 40 < found.seasonal_amplitude < 80


def test_trend_and_forecast_name_the_measure_they_are_about():
    series = seasonal_series().rename("revenue")
    trend = trend_seasonality(series).summary()
    assert trend.startswith("Over 48 periods revenue trends upward (slope ")
    assert trend.endswith("peaking in April.")
    assert forecast(series, 1).summary().startswith("The forecast of revenue for 2025-01 is ")
    unnamed = trend_seasonality(pd.Series([10.0, 11.0, 9.0, 10.5, 10.0])).summary()
    assert unnamed.startswith("Over 5 periods the series shows no significant trend")


def test_a_short_series_gets_a_linear_trend_only():
    series = pd.Series([10.0, 11.0, 9.0, 10.5, 10.0])
    found = trend_seasonality(series)
    assert found.method == "linear" and found.direction == "flat" and found.period is None


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_forecast_interval_covers_a_held_out_point(seed):
    series = seasonal_series(seed=seed)
    predicted = forecast(series.iloc[:-1], 1)
    point = predicted.points[0]
    assert point.label == str(series.index[-1])
    assert point.lower <= series.iloc[-1] <= point.upper
    assert point.upper - point.lower < 40  # informative, not a blanket interval
    assert predicted.method == "ets-seasonal"


def test_a_forecast_of_a_short_trend_has_an_interval_around_the_trend():
    predicted = forecast(pd.Series([10.0, 12.1, 13.9, 16.2, 18.0, 19.9]), 2)
    assert [p.label for p in predicted.points] == ["+1", "+2"]
    first = predicted.points[0]
    assert first.lower < first.value < first.upper and 20 < first.value < 24


def test_time_series_reads_monthly_dates_as_periods():
    df = frame(["d", "v"], [["2024-02-01", 2], ["2024-01-01", 1], ["2024-03-01", 3]])
    series = time_series(df, "d", "v")
    assert [str(p) for p in series.index] == ["2024-01", "2024-02", "2024-03"]


def test_rank_options_puts_the_best_expected_effect_first():
    rows = [["10%", 5.0], ["10%", 7.0], ["0%", 9.0], ["0%", 11.0], ["20%", -1.0], ["20%", 1.0]]
    ranked = rank_options(frame(["discount", "margin"], rows), "discount", "margin")
    assert [o.option for o in ranked.options] == ["0%", "10%", "20%"]
    best = ranked.options[0]
    assert best.expected_effect == 10.0 and best.support == 2 and best.low < 10 < best.high
    assert ranked.summary() == (
        "By margin, the best discount is 0% (expected 10 over 2 rows); "
        "the worst is 20% (expected 0 over 2 rows)."
    )
    alone = rank_options(frame(["discount", "margin"], rows[:2]), "discount", "margin")
    assert alone.summary() == "By margin, the best discount is 10% (expected 6 over 2 rows)."


def test_compute_facts_picks_the_tools_and_keeps_going_past_a_failing_one():
    sales = monthly_sales()
    evidence = [
        Evidence(
            id="q1",
            question="revenue by month and region",
            columns=["month", "region", "revenue"],
            rows=sales.groupby(["month", "region"], as_index=False)["revenue"]
            .sum()
            .to_numpy()
            .tolist(),
        ),
        Evidence(id="q2", question="failed", error="no such table"),
        Evidence(id="q3", question="one row", columns=["n"], rows=[[3]]),
    ]
    facts, caveats = compute_facts(evidence, "diagnostic")
    tools = {f.tool for f in facts}
    assert {"period_change", "trend_seasonality", "outliers"} <= tools
    change = next(f for f in facts if f.tool == "period_change")
    assert change.evidence == "q1" and change.contributions[0].segment == "East"
    assert any("under two cycles" in c for c in caveats)


def test_the_same_rows_asked_twice_give_one_set_of_facts():
    counts = [["Hardware", 336], ["Network", 51], ["Software", 41], ["Database", 40]]
    evidence = [
        Evidence(
            id="q1", question="incidents per category", columns=["category", "n"], rows=counts
        ),
        Evidence(
            id="q2",
            question="total incidents by category",
            columns=["category", "total_incidents"],
            rows=list(reversed(counts)),
        ),
        Evidence(id="q3", question="other", columns=["category", "n"], rows=counts[:3]),
    ]
    facts, _ = compute_facts(evidence, "descriptive")
    assert {f.evidence for f in facts} == {"q1", "q3"}


def test_a_change_driven_by_one_region_and_model_is_found_in_their_combination():
    sales = monthly_sales()
    evidence = [
        Evidence(
            id="q1",
            question="revenue by month, region and model",
            columns=list(sales.columns),
            rows=sales.to_numpy().tolist(),
        )
    ]
    facts, _ = compute_facts(evidence, "diagnostic")
    changes = {f.dimension: f for f in facts if f.tool == "period_change"}
    assert set(changes) == {"region", "model", "region / model"}
    assert changes["region / model"].contributions[0].segment == "East / Aurora"
    assert changes["region / model"].contributions[0].share > 0.8


def test_instants_are_analysed_by_month_and_are_no_segment():
    """Incidents closed at one timestamp each (ServiceNow-like rows): the change compares
    the last two months, not the last two timestamps, and another timestamp column is not
    a breakdown."""
    rng = np.random.default_rng(5)
    rows = []
    for month in range(1, 7):
        for n in range(20 + 10 * (month == 6)):
            closed = f"2024-{month:02d}-{1 + n % 27:02d} {n % 24:02d}:{7 * n % 60:02d}:00"
            rows.append([closed, "Hardware" if n % 3 else "Network", closed, 1])
    rng.shuffle(rows)
    evidence = [
        Evidence(
            id="q1",
            question="incidents closed over time by category",
            columns=["closed_at", "category", "opened_at", "incidents"],
            rows=rows,
        )
    ]
    facts, _ = compute_facts(evidence, "diagnostic")
    changes = [f for f in facts if f.tool == "period_change"]
    assert changes and {c.dimension for c in changes} == {"category"}
    change = changes[0]
    assert (change.previous_period, change.last_period) == ("2024-05", "2024-06")
    assert (change.previous, change.last, change.change) == (20, 30, 10)
    trend = next(f for f in facts if f.tool == "trend_seasonality")
    assert trend.count == 6 and trend.measure == "incidents"


def test_periods_are_kept_as_they_are():
    df = frame(["month", "v"], [[m, 1.0] for m in MONTHS])
    assert coarse_periods(df, "month") == "month" and list(df.columns) == ["month", "v"]
    days = frame(["day", "v"], [["2024-03-01 10:00", 1], ["2024-03-02 11:30", 2]])
    assert coarse_periods(days, "day") == "day (day)"
    assert days["day (day)"].tolist() == ["2024-03-01", "2024-03-02"]


@pytest.mark.parametrize(
    ("measure", "how"),
    [
        ("revenue", "sum"),
        ("average_resolution_time", "mean"),
        ("avg_price", "mean"),
        ("percent_complete", "mean"),
        ("conversion rate", "mean"),
        ("gross_margin", "mean"),  # a margin is a ratio of profit to revenue
        ("total_score", "sum"),
        ("incident_count", "sum"),
        ("moderate", "sum"),  # "rate" inside a word is not a rate
    ],
)
def test_an_average_or_a_rate_is_averaged_and_an_amount_summed(measure, how):
    assert aggregation(measure) == how


def test_the_change_of_an_average_averages_the_rows_and_gives_no_shares():
    columns = ["month", "region", "avg_price"]
    rows = [["2024-01", "East", 10.0], ["2024-01", "West", 30.0]]
    rows += [["2024-02", "East", 10.0], ["2024-02", "West", 50.0]]
    change = period_change(frame(columns, rows), "month", "avg_price", "region")
    assert (change.previous, change.last, change.change) == (20.0, 30.0, 10.0)
    assert [(c.segment, c.change) for c in change.contributions] == [("West", 20.0), ("East", 0.0)]
    assert all(c.share is None for c in change.contributions)
    assert change.summary().endswith("The largest move that way was in region West (+20).")
    assert time_series(frame(columns, rows), "month", "avg_price").tolist() == [20.0, 30.0]
    # a region with no average in one of the months: no change is made up for it
    rows += [["2024-01", "North", 99.0], ["2024-02", "South", 1.0]]
    change = period_change(frame(columns, rows), "month", "avg_price", "region")
    assert {c.segment for c in change.contributions} == {"East", "West"}
    assert change.change < 0 and "largest" not in change.summary()  # none moved down


def test_large_numbers_are_shown_with_separators_and_pass_the_number_check():
    from agents.analysis.facts import shown
    from agents.analysis.numbers import unsupported_number

    assert (shown(1600680.0), shown(-71196.0, "+g"), shown(1529490.5, "+g")) == (
        "1,600,680",
        "-71196",
        "+1,529,490.5",
    )
    assert shown(0.01234) == "0.01234" and shown(None) == "n/a"
    assert unsupported_number("went from 1,600,680 to 1,529,490.5", [1600680.0, 1529490.5]) is None


def test_shares_say_how_a_count_splits_against_an_even_split():
    callers = frame(
        ["caller_id", "incident_count"],
        [["David Loo", 266], ["Bud Richman", 86], ["ITIL User", 75], ["Don Goodliffe", 73]],
    )
    found = shares(callers, "caller_id", "incident_count")
    assert found.total == 500 and found.count == 4 and found.even_share_pct == 25.0
    assert (found.top.segment, found.top.value, found.top.share_pct) == ("David Loo", 266, 53.2)
    assert found.bottom.segment == "Don Goodliffe" and found.top_to_even == 2.128
    assert found.summary() == (
        "David Loo has the largest share of incident_count: 266 of 500 (53.2%), 2.128 times an "
        "even share (25% for each of 4); Don Goodliffe has the smallest: 73 (14.6%)."
    )
    assert all(n in found.numbers() for n in (266, 500, 53.2, 2.128, 25, 73, 14.6))
    # the four equal-sized outliers test found none: 266 is inside the far-out fences
    assert outliers(callers, "incident_count", "caller_id").points == []


def test_shares_apply_to_counts_and_amounts_only():
    rates = frame(["region", "avg_margin"], [["East", 0.2], ["West", 0.3]])
    assert not additive(rates, "avg_margin")
    with pytest.raises(ValueError, match="adds up"):
        shares(rates, "region", "avg_margin")
    signed = frame(["region", "profit"], [["East", -5], ["West", 30]])
    assert not additive(signed, "profit")
    facts, _ = compute_facts(
        [
            Evidence(
                id="q1",
                question="q",
                columns=["region", "avg_margin"],
                rows=[["E", 0.2], ["W", 0.3], ["N", 0.1]],
            )
        ],
        "descriptive",
    )
    assert "shares" not in {f.tool for f in facts}
    facts, _ = compute_facts(
        [
            Evidence(
                id="q1", question="q", columns=["region", "n"], rows=[["E", 2], ["W", 3], ["N", 9]]
            )
        ],
        "descriptive",
    )
    assert [f.tool for f in facts][:1] == ["shares"]
