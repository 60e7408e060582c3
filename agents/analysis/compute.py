"""Which analysis tools apply to which evidence, run on its rows.

A result with a time column and a measure gets the period change (with its drivers by each
category column, and by two of them combined), trend and seasonality, outliers over time,
and a forecast for a predictive question; a result with a category and a measure gets
outliers across the categories, how its total splits over them (a count or an amount:
the largest share against an even split) and, for a prescriptive question, the ranking of the
categories as options. A result of 8 rows or more with no time column and another numeric
column gets how the measure moves with it (rank correlation, and the measure in that
column's lowest and highest quarter: "how does an expense's cost affect its processing
time"). A tool that fails leaves a caveat, and the others still run. A
result whose rows an earlier one already had (in any order, under other column names: "the
incidents per category" asked twice) adds no facts: the narrative would say it twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import pandas as pd
from pandas.api.types import is_numeric_dtype

from agents.analysis.charts import is_dates, roles
from agents.analysis.drivers import PURPOSE as DRIVERS
from agents.analysis.facts import PeriodChange, ToolFacts
from agents.analysis.models import Evidence
from agents.analysis.timeseries import (
    coarse_periods,
    forecast,
    season_length,
    time_series,
    trend_seasonality,
)
from agents.analysis.tools import (
    RELATION_MIN_ROWS,
    additive,
    frame,
    outliers,
    period_change,
    rank_options,
    related_columns,
    relation,
    shares,
)

log = logging.getLogger(__name__)


def compute_facts(
    evidence: Sequence[Evidence], question_type: str, *, horizon: int = 3
) -> tuple[list[ToolFacts], list[str]]:
    """The tools' results on every usable piece of ``evidence`` and the caveats met."""
    facts: list[ToolFacts] = []
    caveats: list[str] = []
    seen: set[str] = set()
    for item in evidence:
        if not item.ok or len(item.rows) < 2:
            continue
        rows = repr(sorted(map(repr, item.rows)))
        if rows in seen:  # two sub-questions answered with the same rows: one set of facts
            continue
        seen.add(rows)
        found, notes = _analyse(item, question_type, horizon)
        facts.extend(found)
        caveats.extend(notes)
    if not facts and any(e.ok for e in evidence):
        caveats.append(
            "no analysis applied: no result holds a time series, a breakdown or two measures"
        )
    drivers = {e.id for e in evidence if e.purpose == DRIVERS}
    return sorted(facts, key=lambda f: _driver_rank(f, drivers)), caveats


def _driver_rank(fact: ToolFacts, drivers: set[str]) -> int:
    """Where a fact goes: the drivers' changes by segment first (a pair of breakdowns
    before one alone: "Europe / Aurora 5" answers "why"), then the rest as computed. The
    narrative is written from the facts in this order, and falls back to the first ones."""
    if fact.evidence not in drivers or not isinstance(fact, PeriodChange):
        return 3
    return 2 if not fact.dimension else 1 if " / " not in fact.dimension else 0


def _analyse(item: Evidence, kind: str, horizon: int) -> tuple[list[ToolFacts], list[str]]:
    df = frame(item.columns, item.rows)
    found = roles(list(df.columns), df.to_numpy().tolist())
    time, category, measure = found["time"], found["category"], found["measure"]
    if measure is None:
        return [], []
    runs: list[tuple[str, Callable[[], ToolFacts]]] = []
    notes: list[str] = []
    if time is not None:
        instants, time = time, coarse_periods(df, time)
        series = time_series(df, time, measure)
        if kind in {"descriptive", "diagnostic", "predictive"}:
            for dimension in _dimensions(df, measure, time, instants):
                runs.append(("period_change", partial(period_change, df, time, measure, dimension)))
        if len(series) >= 3:
            runs.append(("trend_seasonality", lambda: trend_seasonality(series)))
        if len(series) >= 4 and kind in {"descriptive", "diagnostic"}:
            runs.append(("outliers", lambda: outliers(df, measure, time)))
        if kind == "predictive":
            if len(series) >= 4:
                runs.append(("forecast", lambda: forecast(series, horizon)))
            else:
                notes.append(f"{item.id}: {len(series)} periods are too few to forecast from")
        cycle = season_length(series)
        if cycle and len(series) < 2 * cycle and kind in {"diagnostic", "predictive"}:
            notes.append(
                f"{item.id}: {len(series)} periods, under two cycles of {cycle}: "
                "seasonality not estimated"
            )
    elif category is not None:
        if kind == "prescriptive":
            runs.append(("rank_options", lambda: rank_options(df, category, measure)))
        if kind in {"descriptive", "diagnostic"} and additive(df, measure):
            runs.append(("shares", lambda: shares(df, category, measure)))
        if len(df) >= 3:
            runs.append(("outliers", lambda: outliers(df, measure, category)))
    if time is None and len(df) >= RELATION_MIN_ROWS:
        for other in related_columns(df, measure):
            runs.append(("relation", partial(relation, df, other, measure)))
    results: list[ToolFacts] = []
    for name, run in runs:
        try:
            result = run()
        except Exception as exc:  # one tool's failure must not end the analysis
            log.info("analysis tool %s on %s failed: %s", name, item.id, exc)
            notes.append(f"{item.id}: {name} failed: {exc}")
            continue
        result.evidence = item.id
        results.append(result)
    return results, notes


def _dimensions(df: pd.DataFrame, measure: str, *times: str) -> list[str | None]:
    """The breakdowns to decompose a change by: each text column (two at most) that is not
    one of ``times`` or another date, and, with two, their combination (a change driven by
    one region and one model shows there)."""
    text = [
        c
        for c in df.columns
        if c != measure
        and c not in times
        and not is_numeric_dtype(df[c])
        and not is_dates(df[c].dropna())  # another timestamp is not a segment
    ][:2]
    if len(text) == 2:
        combined = " / ".join(text)
        df[combined] = df[text[0]].astype(str) + " / " + df[text[1]].astype(str)
        text.append(combined)
    return list(text) or [None]


def facts_payload(facts: Sequence[ToolFacts]) -> list[dict[str, Any]]:
    """The tools' results as plain dicts (what the answer and the prompt carry)."""
    return [f.facts() for f in facts]
