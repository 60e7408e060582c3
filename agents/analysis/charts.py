"""Charts of the evidence: a Vega-Lite v5 spec per finding, and a PNG rendered with
matplotlib on request.

A result with a time column and a measure is a line (one per category when there is also a
category column); a category and a measure, a bar chart; two numeric columns and neither,
a scatter of the measure against the other. A result with no numeric column, or one row,
gets no chart.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from agents.analysis.plan import TIME_NAMES
from agents.analysis.tools import IDENTIFIER

VEGA_LITE = "https://vega.github.io/schema/vega-lite/v5.json"
MAX_POINTS = 500


# a name that says the column is an amount, even when a time word is in it
# (``avg_processing_time``, ``total_days``, ``resolution_time_hours``)
AMOUNT_NAMES = re.compile(
    r"(?:^|_)(avg|average|mean|median|total|sum|min|max|count|num|number|amount|duration|"
    r"elapsed|hours|minutes|seconds|days|rate)(?:_|$)",
    re.I,
)
# the time words a number can be a period of (a year, a month number, a week)
PERIOD_NAMES = re.compile(
    r"(?<![A-Za-z0-9])(\w*_)?(year|month|quarter|week|day|period)(_\w*|s)?(?![A-Za-z0-9])", re.I
)


def roles(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> dict[str, str | None]:
    """The ``time``, ``category`` and ``measure`` columns of a result (None when absent):
    the measure is the last numeric column that is not a time; the time a column whose text
    values all parse as dates, or one named like a time (date, month, year, ...) that is
    not named like an amount (``avg_processing_time`` is a measure) and, when it holds
    numbers, is named like a period and holds whole numbers (a year, a month number)."""
    df = pd.DataFrame([list(r) for r in rows], columns=list(columns)) if rows else None
    found: dict[str, str | None] = {"time": None, "category": None, "measure": None}
    if df is None or df.empty:
        return found
    for position, name in enumerate(df.columns):
        # by position: a result may repeat a column name (SELECT region, region ...)
        values = df.iloc[:, position].dropna()
        numeric = pd.to_numeric(values, errors="coerce").notna().all() and len(values) > 0
        if found["time"] is None and (_named_time(str(name), values, numeric) or is_dates(values)):
            found["time"] = name
        elif numeric:
            found["measure"] = name
        elif found["category"] is None:
            found["category"] = name
    return found


def _named_time(name: str, values: pd.Series, numeric: bool) -> bool:
    if not TIME_NAMES.fullmatch(name) or AMOUNT_NAMES.search(name):
        return False
    if not numeric:
        return True
    whole = pd.to_numeric(values, errors="coerce")
    return bool(PERIOD_NAMES.fullmatch(name)) and bool((whole == whole.round()).all())


def is_dates(values: pd.Series) -> bool:
    """Whether every value is text that starts like a date (YYYY-MM) and parses as one."""
    if values.empty or pd.api.types.is_numeric_dtype(values):
        return False
    text = values.astype(str)
    if not text.str.match(r"^\d{4}-\d{2}").all():
        return False
    try:
        pd.to_datetime(text, format="mixed")
    except (ValueError, TypeError):
        return False
    return True


def chart_spec(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], title: str = ""
) -> dict[str, Any] | None:
    """A Vega-Lite v5 spec of a result: a line over time, or bars per category."""
    if len(rows) < 2:
        return None
    found = roles(columns, rows)
    time, category, measure = found["time"], found["category"], found["measure"]
    other = _other_number(columns, rows, measure) if time is None and category is None else None
    if measure is None or (time is None and category is None and other is None):
        return None
    values = [dict(zip(columns, row, strict=False)) for row in rows[:MAX_POINTS]]
    y = {"field": measure, "type": "quantitative"}
    encoding: dict[str, Any]
    if other is not None:
        encoding = {"x": {"field": other, "type": "quantitative"}, "y": y}
        mark = "point"
    elif time is not None:
        encoding = {"x": {"field": time, "type": "ordinal"}, "y": y}
        if category is not None:
            encoding["color"] = {"field": category, "type": "nominal"}
        mark = "line"
    else:
        encoding = {"x": {"field": category, "type": "nominal", "sort": "-y"}, "y": y}
        mark = "bar"
    return {
        "$schema": VEGA_LITE,
        "title": title[:120],
        "data": {"values": values},
        "mark": mark,
        "encoding": encoding,
    }


def _other_number(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], measure: str | None
) -> str | None:
    """The first numeric column of a result other than ``measure`` and not an identifier
    (the x of a scatter)."""
    for position, name in enumerate(columns):
        values = pd.Series([row[position] for row in rows]).dropna()
        if name == measure or IDENTIFIER.search(str(name)):
            continue
        if len(values) and pd.to_numeric(values, errors="coerce").notna().all():
            return str(name)
    return None


def render_png(spec_or_data: dict[str, Any] | pd.DataFrame, path: str | Path) -> Path:
    """Draw a spec made by :func:`chart_spec` (or a DataFrame, charted the same way) to a
    PNG file at ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    spec = spec_or_data
    if isinstance(spec_or_data, pd.DataFrame):
        rows = spec_or_data.to_numpy().tolist()
        spec = chart_spec([str(c) for c in spec_or_data.columns], rows)
        if spec is None:
            raise ValueError(f"nothing to chart in columns {list(spec_or_data.columns)}")
    encoding = spec["encoding"]
    data = pd.DataFrame(spec["data"]["values"])
    x, y = encoding["x"]["field"], encoding["y"]["field"]
    figure, axes = plt.subplots(figsize=(7, 4))
    try:
        if spec["mark"] == "line":
            color = encoding.get("color", {}).get("field")
            groups = data.groupby(color, sort=True) if color else [("", data)]
            for name, part in groups:
                axes.plot(part[x].astype(str), part[y], marker="o", label=str(name) or None)
            if color:
                axes.legend(title=color)
        elif spec["mark"] == "point":
            axes.scatter(data[x], data[y], s=12)
        else:
            axes.bar(data[x].astype(str), data[y])
        axes.set_xlabel(x)
        axes.set_ylabel(y)
        axes.set_title(spec.get("title", ""))
        axes.tick_params(axis="x", labelrotation=45)
        figure.tight_layout()
        path = Path(path)
        figure.savefig(path, format="png", dpi=100)
    finally:
        plt.close(figure)
    return path
