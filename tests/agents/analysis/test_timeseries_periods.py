"""Periods written as numbers: years, and a ledger's year-months (202411), are time axes of
a known cycle, so a monthly series kept as YYYYMM shows its seasonal peak (AutoFin's Helix
peaks every November; the series had been read as plain numbers, with no cycle)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from agents.analysis.timeseries import forecast, time_series, trend_seasonality
from agents.analysis.tools import frame


def ledger(peak_month: int = 11) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    rows = []
    for year in range(2020, 2026):
        for month in range(1, 13):
            value = 100 + (40 if month == peak_month else 0) + (year - 2020) * 5
            rows.append([f"{year}{month:02d}", value + rng.normal(0, 3)])
    return frame(["period", "revenue"], rows)


def test_year_months_kept_as_numbers_are_a_monthly_series_with_its_peak():
    series = time_series(ledger(), "period", "revenue")
    assert isinstance(series.index, pd.PeriodIndex) and series.index.freqstr.startswith("M")
    assert str(series.index[0]) == "2020-01" and len(series) == 72
    found = trend_seasonality(series)
    assert found.method == "stl" and found.period == 12 and found.peak_position == "November"
    ahead = forecast(series, 2)
    assert [p.label for p in ahead.points] == ["2026-01", "2026-02"]


@pytest.mark.parametrize(
    "values, kind",
    [
        ([2019, 2020, 2021, 2022], "Y"),
        ([202413, 202414, 202415, 202416], None),  # no month 13: not year-months
        ([1, 2, 3, 4], None),  # plain numbers stay numbers
        ([202401.5, 202402, 202403, 202404], None),  # not whole
    ],
)
def test_only_whole_years_and_real_year_months_become_periods(values, kind):
    df = frame(["when", "n"], [[v, i] for i, v in enumerate(values)])
    index = time_series(df, "when", "n").index
    if kind is None:
        assert not isinstance(index, pd.PeriodIndex)
    else:
        assert isinstance(index, pd.PeriodIndex) and index.freqstr.startswith(kind)


def test_a_trend_without_a_cycle_is_not_called_seasonal():
    rng = np.random.default_rng(9)
    rows = [[f"{2020 + i // 12}{i % 12 + 1:02d}", 50 + i + rng.normal(0, 1)] for i in range(72)]
    found = trend_seasonality(time_series(frame(["period", "revenue"], rows), "period", "revenue"))
    assert found.seasonal_strength is not None and found.seasonal_strength < 0.4
    assert "no clear seasonality" in found.summary() and "peaking" not in found.summary()
    seasonal = trend_seasonality(time_series(ledger(), "period", "revenue"))
    assert "It is seasonal with a cycle of 12 periods" in seasonal.summary()
