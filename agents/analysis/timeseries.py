"""Time series tools: a series from a sub-answer's rows, its trend and seasonality, and a
forecast with an interval.

Seasonality uses statsmodels' STL when the series holds at least two cycles; the trend is
scipy's linear regression (slope, p-value); the forecast is statsmodels' ETS model
(additive error and trend, additive seasonality with two cycles or more) with its
prediction interval, SARIMAX when ETS cannot be fitted.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.tsa.exponential_smoothing.ets import ETSModel
from statsmodels.tsa.seasonal import STL
from statsmodels.tsa.statespace.sarimax import SARIMAX

from agents.analysis.facts import Forecast, ForecastPoint, TrendSeasonality, label, rounded
from agents.analysis.tools import aggregation

CYCLES = {"M": 12, "Q": 4, "W": 52, "D": 7}


def time_series(df: pd.DataFrame, time: str, measure: str) -> pd.Series:
    """``measure`` per value of ``time`` (summed, or averaged for an average or a rate:
    :func:`~agents.analysis.tools.aggregation`), in time order; indexed by periods when the
    times parse as dates of a regular frequency (monthly, quarterly, ...), are years, or
    are year-months written as numbers (``202411``, how a ledger keeps its periods)."""
    if time not in df.columns or measure not in df.columns:
        raise ValueError(f"no column {time!r} or {measure!r} in {list(df.columns)}")
    rows = df.dropna(subset=[time, measure]).groupby(time, sort=True)[measure]
    series = rows.agg(aggregation(measure))
    series = series.astype(float)
    if pd.api.types.is_numeric_dtype(series.index):
        whole = series.index.to_numpy(dtype=float)
        if len(whole) and (whole == np.round(whole)).all():
            numbers = whole.astype(int)
            if numbers.min() >= 1800 and numbers.max() <= 2200:
                series.index = pd.PeriodIndex([str(y) for y in numbers], freq="Y")
            elif _year_months(numbers):  # 202411: November 2024 (a ledger's period)
                months = [f"{n // 100}-{n % 100:02d}" for n in numbers]
                series.index = pd.PeriodIndex(months, freq="M")
        return series
    try:
        when = pd.to_datetime(pd.Series(series.index.astype(str)), format="mixed")
    except (ValueError, TypeError):
        return series
    series.index = pd.DatetimeIndex(when)
    series = series.sort_index()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pandas 3 announces an offset in place of a string
        freq = pd.infer_freq(series.index) if len(series) >= 3 else None
    code = str(getattr(freq, "freqstr", freq) or "").split("-")[0].rstrip("SE")
    if code in {"M", "Q", "Y", "A", "W", "D"}:
        series.index = series.index.to_period("Y" if code == "A" else code)
    return series


def _year_months(numbers: np.ndarray) -> bool:
    """Whether every number reads as a year and month, YYYYMM (180001 to 220012)."""
    years, months = numbers // 100, numbers % 100
    return bool(((years >= 1800) & (years <= 2200) & (months >= 1) & (months <= 12)).all())


def coarse_periods(df: pd.DataFrame, time: str, *, most: int = 60) -> str:
    """The column to analyse ``time`` by: ``time`` itself, or, when its values are instants
    (a time of day, or more than ``most`` distinct dates) rather than periods, a column
    ``"<time> (month)"`` (``"<time> (day)"`` when they span under 90 days) added to ``df``
    holding each row's period, so a change compares two months, not two timestamps."""
    values = df[time].dropna()
    if values.empty or pd.api.types.is_numeric_dtype(values):
        return time
    try:
        when = pd.to_datetime(values.astype(str), format="mixed")
    except (ValueError, TypeError):
        return time
    has_clock = bool((when != when.dt.normalize()).any())
    if not has_clock and when.nunique() <= most:
        return time
    monthly = (when.max() - when.min()).days >= 90
    name = f"{time} ({'month' if monthly else 'day'})"
    df[name] = when.dt.strftime("%Y-%m" if monthly else "%Y-%m-%d").reindex(df.index)
    return name


def season_length(series: pd.Series) -> int | None:
    """The cycle of a period-indexed series (12 for months, 4 for quarters, ...)."""
    if isinstance(series.index, pd.PeriodIndex):
        return CYCLES.get(series.index.freqstr.split("-")[0].rstrip("SE"))
    return None


def trend_seasonality(series: pd.Series, period: int | None = None) -> TrendSeasonality:
    """The linear trend of ``series`` (slope per step, p-value, R²; ``up``/``down`` when
    p < 0.05, else ``flat``) and, with two cycles of ``period`` (default: from the index),
    STL's seasonality: strength (1 - var(remainder) / var(seasonal + remainder)),
    amplitude and the position of the seasonal peak."""
    values = series.dropna().astype(float)
    if len(values) < 3:
        raise ValueError(f"trend_seasonality needs at least 3 points, got {len(values)}")
    fit = stats.linregress(np.arange(len(values)), values.to_numpy())
    direction = "flat"
    if fit.pvalue < 0.05:
        direction = "up" if fit.slope > 0 else "down"
    result = TrendSeasonality(
        count=len(values),
        method="linear",
        slope=rounded(fit.slope),
        p_value=rounded(fit.pvalue),
        r_squared=rounded(fit.rvalue**2),
        direction=direction,
        measure=_name(series),
    )
    period = period or season_length(values)
    if period and period >= 2 and len(values) >= 2 * period:
        decomposition = STL(values.to_numpy(), period=period, robust=True).fit()
        seasonal, resid = decomposition.seasonal, decomposition.resid
        spread = np.var(seasonal + resid)
        strength = max(0.0, 1 - np.var(resid) / spread) if spread > 0 else 0.0
        last_cycle = seasonal[-period:]
        peak = values.index[len(values) - period + int(np.argmax(last_cycle))]
        result.method, result.period = "stl", period
        result.seasonal_strength = rounded(strength)
        result.seasonal_amplitude = rounded(float(last_cycle.max() - last_cycle.min()))
        result.peak_position = _position(peak, period)
    return result


def forecast(
    series: pd.Series, horizon: int = 3, *, level: float = 0.95, period: int | None = None
) -> Forecast:
    """``horizon`` future values of ``series`` with their ``level`` prediction interval."""
    values = series.dropna().astype(float)
    if len(values) < 4:
        raise ValueError(f"forecast needs at least 4 points, got {len(values)}")
    if horizon < 1:
        raise ValueError(f"horizon must be at least 1, got {horizon}")
    period = period or season_length(values)
    seasonal = bool(period and period >= 2 and len(values) >= 2 * period)
    data = pd.Series(values.to_numpy())  # a RangeIndex: ETS's prediction wants an index
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            model = ETSModel(
                data,
                error="add",
                trend="add",
                seasonal="add" if seasonal else None,
                seasonal_periods=period if seasonal else None,
            ).fit(disp=False)
            frame = model.get_prediction(start=len(data), end=len(data) + horizon - 1)
            table = frame.summary_frame(alpha=1 - level)
            mean, low, high = (table[c].to_numpy() for c in ("mean", "pi_lower", "pi_upper"))
            method = "ets" + ("-seasonal" if seasonal else "")
        except (ValueError, np.linalg.LinAlgError):
            fitted = SARIMAX(data.to_numpy(), order=(1, 1, 0), trend="t").fit(disp=False)
            predicted = fitted.get_forecast(horizon)
            interval = np.asarray(predicted.conf_int(alpha=1 - level))
            mean, low, high = np.asarray(predicted.predicted_mean), interval[:, 0], interval[:, 1]
            method = "sarimax"
    labels = _future_labels(values.index, horizon)
    points = [
        ForecastPoint(labels[i], rounded(mean[i]), rounded(low[i]), rounded(high[i]))
        for i in range(horizon)
    ]
    return Forecast(
        method=method, count=len(values), level=level, points=points, measure=_name(series)
    )


def _name(series: pd.Series) -> str | None:
    """The series' name (the measure :func:`time_series` summed), None when it has none."""
    return str(series.name) if isinstance(series.name, str) and series.name else None


def _future_labels(index: pd.Index, horizon: int) -> list[str]:
    if isinstance(index, pd.PeriodIndex):
        return [str(index[-1] + step) for step in range(1, horizon + 1)]
    return [f"+{step}" for step in range(1, horizon + 1)]


def _position(peak: object, period: int) -> str:
    if isinstance(peak, pd.Period):
        if period == 12:
            return peak.strftime("%B")
        if period == 4:
            return f"Q{peak.quarter}"
    return label(peak)
