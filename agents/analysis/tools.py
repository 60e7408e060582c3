"""Analysis tools on the sub-answers' results (pandas DataFrames): what changed and who
drove it, outliers, how a total splits over segments, how one measure moves with another,
and the ranking of options. Time
series tools are in :mod:`agents.analysis.timeseries`.

Statistics come from maintained libraries (pandas, scipy); each tool returns a small
dataclass of rounded facts (:mod:`agents.analysis.facts`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from agents.analysis.facts import (
    Contribution,
    OptionEffect,
    Outlier,
    Outliers,
    PeriodChange,
    RankedOptions,
    Relation,
    SegmentShare,
    Shares,
    label,
    rounded,
)


def frame(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> pd.DataFrame:
    """A DataFrame of a sub-answer's rows; columns holding numbers (or numeric text) are
    numeric, duplicate column names made unique."""
    names: list[str] = []
    for name in columns:
        unique, n = str(name), 2
        while unique in names:
            unique, n = f"{name}_{n}", n + 1
        names.append(unique)
    df = pd.DataFrame([list(r) for r in rows], columns=names)
    for name in names:
        converted = pd.to_numeric(df[name], errors="coerce")
        if len(df) and converted.notna().sum() == df[name].notna().sum():
            df[name] = converted
    return df


# a measure whose name says it is a ratio of something (an average, a rate, a share):
# summing it over rows means nothing, so it is averaged per period or segment instead
AVERAGED = re.compile(
    r"(?:^|[^a-z])(avg|average|mean|median|rate|ratio|percent|pct|percentage|share|score|margin)"
    r"(?:$|[^a-z])",
    re.I,
)
SUMMED = re.compile(r"(?:^|[^a-z])(total|sum|count|num|number)(?:$|[^a-z])", re.I)


def aggregation(measure: str) -> str:
    """How ``measure`` combines over rows: ``"mean"`` for an average, rate or share (by its
    name, :data:`AVERAGED`, unless it also says it is a total or a count), else ``"sum"``."""
    return "mean" if AVERAGED.search(measure) and not SUMMED.search(measure) else "sum"


def _require(df: pd.DataFrame, *names: str | None) -> None:
    missing = [n for n in names if n is not None and n not in df.columns]
    if missing:
        raise ValueError(f"no column {missing} in {list(df.columns)}")


def period_change(
    df: pd.DataFrame, time: str, measure: str, dimension: str | None = None
) -> PeriodChange:
    """The change of ``measure`` (summed per period; averaged when it is an average or a
    rate, :func:`aggregation`) between the last two periods of ``time``, and with
    ``dimension`` each segment's change, the segments that drove the change first (largest
    change in its direction). A sum's change is the sum of its segments' (each one's
    ``share`` of it); an average's is not (a mix of segments moves it too), so its segments
    carry no share."""
    _require(df, time, measure, dimension)
    how = aggregation(measure)
    data = df.dropna(subset=[time, measure])
    totals = data.groupby(time, sort=True)[measure].agg(how)
    if len(totals) < 2:
        raise ValueError(f"period_change needs two periods of {time!r}, got {len(totals)}")
    before, after = totals.index[-2], totals.index[-1]
    previous, last = float(totals.iloc[-2]), float(totals.iloc[-1])
    change = last - previous
    pct = change / abs(previous) * 100 if previous else None
    contributions: list[Contribution] = []
    if dimension is not None:
        pivot = data.pivot_table(index=dimension, columns=time, values=measure, aggfunc=how)
        pivot = pivot.reindex(columns=[before, after])
        # a segment absent from a period sums to 0 there, but has no average there
        pivot = pivot.fillna(0.0) if how == "sum" else pivot.dropna()
        deltas = pivot[after] - pivot[before]
        sign = -1.0 if change < 0 else 1.0
        for segment in (deltas * sign).sort_values(ascending=False).index:
            delta = float(deltas[segment])
            contributions.append(
                Contribution(
                    segment=label(segment),
                    previous=rounded(float(pivot.at[segment, before])),
                    last=rounded(float(pivot.at[segment, after])),
                    change=rounded(delta),
                    share=rounded(delta / change) if change and how == "sum" else None,
                )
            )
    per_period = int(data.groupby(time).size().max())
    return PeriodChange(
        averaged_rows=per_period if how == "mean" and per_period > 1 else None,
        measure=measure,
        previous_period=label(before),
        last_period=label(after),
        previous=rounded(previous),
        last=rounded(last),
        change=rounded(change),
        pct_change=rounded(pct),
        dimension=dimension,
        contributions=contributions,
    )


def outliers(
    df: pd.DataFrame,
    measure: str,
    by: str | None = None,
    *,
    z_threshold: float = 3.0,
    iqr_factor: float = 3.0,
) -> Outliers:
    """Values of ``measure`` (per ``by`` label when given: summed, or averaged for an
    average or a rate, :func:`aggregation`) outside Tukey's far-out
    fences (``iqr_factor`` IQR past the quartiles; 1.5 flags several points of any normal
    sample of 30) or with ``|z| >= z_threshold``, largest ``|z|`` first."""
    _require(df, measure, by)
    data = df.dropna(subset=[measure])
    values = (
        data.groupby(by, sort=False)[measure].agg(aggregation(measure)) if by else data[measure]
    )
    values = values.astype(float)
    if len(values) < 3:
        raise ValueError(f"outliers needs at least 3 values of {measure!r}, got {len(values)}")
    z = pd.Series(stats.zscore(values.to_numpy(), ddof=1), index=values.index).fillna(0.0)
    q1, q3 = np.percentile(values, [25, 75])
    spread = stats.iqr(values)
    low, high = q1 - iqr_factor * spread, q3 + iqr_factor * spread
    flagged = values[(values < low) | (values > high) | (z.abs() >= z_threshold)]
    order = z[flagged.index].abs().sort_values(ascending=False).index
    points = [
        Outlier(label=label(index), value=rounded(float(values[index])), zscore=rounded(z[index]))
        for index in order
    ]
    return Outliers(
        measure=measure,
        count=len(values),
        mean=rounded(float(values.mean())),
        lower_fence=rounded(float(low)),
        upper_fence=rounded(float(high)),
        points=points,
    )


def rank_options(
    df: pd.DataFrame, option: str, effect: str, *, level: float = 0.95
) -> RankedOptions:
    """Each value of ``option`` with its expected ``effect`` (the mean over its rows), its
    support (rows) and a ``level`` t interval of the mean when it has two rows or more,
    best first."""
    _require(df, option, effect)
    data = df.dropna(subset=[option, effect])
    if data.empty:
        raise ValueError(f"rank_options: no rows with both {option!r} and {effect!r}")
    grouped = data.groupby(option, sort=False)[effect]
    summary = grouped.agg(["mean", "count", "sem"]).sort_values("mean", ascending=False)
    ranked: list[OptionEffect] = []
    for name, row in summary.iterrows():
        mean, count, sem = float(row["mean"]), int(row["count"]), row["sem"]
        low = high = None
        if count >= 2 and pd.notna(sem) and sem > 0:
            low, high = stats.t.interval(level, count - 1, loc=mean, scale=float(sem))
            low, high = rounded(low), rounded(high)
        ranked.append(OptionEffect(label(name), rounded(mean), count, low, high))
    return RankedOptions(option=option, effect=effect, options=ranked)


def additive(df: pd.DataFrame, measure: str) -> bool:
    """Whether ``measure``'s values add up to a meaningful total: summed by name
    (:func:`aggregation`: a count or an amount, not an average or a rate), none negative."""
    if measure not in df.columns or aggregation(measure) != "sum":
        return False
    values = pd.to_numeric(df[measure], errors="coerce").dropna()
    return bool(len(values)) and bool((values >= 0).all()) and float(values.sum()) > 0


def shares(df: pd.DataFrame, category: str, measure: str) -> Shares:
    """How the total of ``measure`` (an additive one: :func:`additive`) splits over the
    segments of ``category``: the largest and the smallest share against an even split."""
    _require(df, category, measure)
    if not additive(df, measure):
        raise ValueError(f"shares: {measure!r} is no count or amount that adds up")
    values = df.dropna(subset=[category, measure]).groupby(category, sort=False)[measure].sum()
    if len(values) < 2:
        raise ValueError(f"shares needs at least 2 segments of {category!r}, got {len(values)}")
    total = float(values.sum())
    ordered = values.astype(float).sort_values(ascending=False)
    even = 100.0 / len(ordered)

    def segment(name: Any) -> SegmentShare:
        value = float(ordered[name])
        return SegmentShare(label(name), rounded(value), rounded(100.0 * value / total))

    top = segment(ordered.index[0])
    return Shares(
        measure=measure,
        category=category,
        total=rounded(total),
        count=len(ordered),
        even_share_pct=rounded(even),
        top=top,
        bottom=segment(ordered.index[-1]),
        top_to_even=rounded(top.share_pct / even),
    )


def relation(df: pd.DataFrame, x: str, y: str, *, alpha: float = 0.05) -> Relation:
    """How ``y`` moves with ``x`` over the rows having both: Spearman's rank correlation
    (scipy; a monotonic relation, not only a straight line) and the mean of ``y`` in the
    lowest and the highest quarter of ``x`` (what "cheaper expenses wait longer" is made
    of)."""
    _require(df, x, y)
    data = df[[x, y]].apply(pd.to_numeric, errors="coerce").dropna()
    if len(data) < RELATION_MIN_ROWS or data[x].nunique() < 4 or data[y].nunique() < 2:
        raise ValueError(
            f"relation needs {RELATION_MIN_ROWS} rows and 4 values of {x!r}, got "
            f"{len(data)} rows and {data[x].nunique()} values"
        )
    test = stats.spearmanr(data[x], data[y])
    rho, p_value = float(test.statistic), float(test.pvalue)
    quarter = pd.qcut(data[x], 4, duplicates="drop")
    groups = data.groupby(quarter, observed=True)
    low, high = (
        groups.get_group(quarter.cat.categories[0]),
        groups.get_group(quarter.cat.categories[-1]),
    )
    return Relation(
        x=x,
        y=y,
        count=len(data),
        rho=rounded(rho),
        p_value=rounded(p_value),
        monotonic=bool(p_value < alpha and abs(rho) >= 0.1),
        low_x_up_to=rounded(float(low[x].max())),
        low_mean_y=rounded(float(low[y].mean())),
        high_x_from=rounded(float(high[x].min())),
        high_mean_y=rounded(float(high[y].mean())),
    )


RELATION_MIN_ROWS = 8
# a column that numbers rows rather than measures them: no relation to read
IDENTIFIER = re.compile(r"(?:^|_)(id|key|no|number|code|rank|index)$", re.I)


def related_columns(df: pd.DataFrame, measure: str) -> list[str]:
    """The numeric columns other than ``measure`` to relate it to (two at most): not named
    like an identifier, with 4 distinct values or more."""
    return [
        c
        for c in df.columns
        if c != measure
        and pd.api.types.is_numeric_dtype(df[c])
        and not IDENTIFIER.search(str(c))
        and df[c].nunique() >= 4
    ][:2]
