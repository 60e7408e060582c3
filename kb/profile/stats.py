"""Statistics of one column from its sampled values and whole-table SQL aggregates.

``profile_column`` annotates the semantic type (``kb.profile.annotate``) and fills the
statistics layout documented in ``kb.profile.profiler``. Figures come from, in order of preference:
every row (when the sample is the whole table), SQL aggregates over the whole table, the
sample. Floats are rounded to 12 significant digits so unchanged data hashes the same.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kb.profile.annotate import (
    ColumnShape,
    ValueFacts,
    annotate,
    declared_family,
    normalize_value,
    value_facts,
)
from kb.profile.model import ColumnProfile, ProfileOptions
from kb.profile.temporal import comparable, display, iso, native_format, parse
from kb.target.reflection import ColumnInfo
from kb.target.results import to_jsonable

_PLAIN = frozenset({type(None), int, str, bool})  # values normalize_value keeps as they are
MAX_SHOWN_LENGTH = 100  # longer strings are cut in top values and examples
TopValues = Callable[[int], list[tuple[Any, int]] | None]


@dataclass
class ColumnInput:
    """Everything known about a column before its statistics are computed.

    Attributes:
        info: the reflected column.
        values: sampled values, NULLs included (every row when ``whole_table``).
        row_count: rows in the table (None when unknown).
        whole_table: ``values`` hold every row of the table.
        aggregates: SQL aggregates over the whole table (``kb.profile.sql.AGGREGATES``).
        key: the column is a primary-key or foreign-key member.
        references: ``{"table", "column"}`` targets of its foreign keys.
        top_values: runs ``GROUP BY`` over the whole table (None: use the sample).
    """

    info: ColumnInfo
    values: list[Any]
    row_count: int | None
    whole_table: bool
    aggregates: dict[str, Any] = field(default_factory=dict)
    key: bool = False
    references: list[dict[str, str]] = field(default_factory=list)
    top_values: TopValues | None = None


def rounded(value: float) -> float:
    """``value`` with 12 significant digits (stable across backends and runs)."""
    return float(f"{value:.12g}")


def share(part: float, total: float) -> float:
    """``part / total`` rounded to 6 decimals (0 when ``total`` is 0)."""
    return round(part / total, 6) if total else 0.0


def _number(value: Any) -> int | float | None:
    value = normalize_value(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if isinstance(value, int) else rounded(value)


def _shown(value: Any) -> Any:
    value = to_jsonable(value)
    if isinstance(value, str) and len(value) > MAX_SHOWN_LENGTH:
        return value[: MAX_SHOWN_LENGTH - 1] + "…"
    return value


def estimate_distinct(counts: Counter[Any], sample_n: int, population_n: int) -> int:
    """GEE estimate of the distinct values of a population from a sample's value counts."""
    if sample_n == 0:
        return 0
    once = sum(1 for c in counts.values() if c == 1)
    scale = math.sqrt(max(population_n, sample_n) / sample_n)
    return min(population_n, round(scale * once + (len(counts) - once)))


def profile_column(inp: ColumnInput, options: ProfileOptions) -> ColumnProfile:
    """Annotate and describe one column.

    Args:
        inp: the sampled values and whole-table aggregates of the column.
        options: the type-rule thresholds and output sizes.
    """
    sample = [v if type(v) in _PLAIN else normalize_value(v) for v in inp.values]
    present = [v for v in sample if v is not None]
    facts = value_facts(present)
    counts = _counts(inp, len(sample), present)
    shape = ColumnShape(
        name=inp.info.name,
        declared=declared_family(inp.info.type),
        key=inp.key,
        non_null=counts["non_null_count"],
        distinct=counts["distinct_count"],
        row_count=counts["row_count"],
    )
    semantic = annotate(shape, facts, options)
    profile = ColumnProfile(
        name=inp.info.name,
        data_type=inp.info.type,
        semantic_type=semantic,
        nullable=inp.info.nullable,
        primary_key=inp.info.primary_key,
        comment=inp.info.comment,
        statistics=counts,
        references=list(inp.references),
    )
    if semantic in ("categorical", "text"):
        _add_values(profile, inp, present, options)
        return profile
    if semantic == "numeric":
        kind = {"integer": "integer", "float": "float"}.get(shape.declared)
        counts["numeric"] = numeric_statistics(facts, inp.aggregates, inp.whole_table, kind)
    elif semantic == "temporal":
        counts["temporal"] = temporal_statistics(facts, inp.aggregates, inp.whole_table)
    else:
        counts["identifier"] = _identifier_statistics(facts, counts, inp)
    profile.examples = [_shown(v) for v in list(dict.fromkeys(present))[: options.examples]]
    return profile


def _counts(inp: ColumnInput, sample_n: int, present: list[Any]) -> dict[str, Any]:
    rows = inp.row_count if inp.row_count is not None else sample_n
    agg = inp.aggregates
    non_null: Any  # SQL may give a Decimal
    distinct: Any
    if inp.whole_table:
        non_null, distinct, exact = len(present), len(set(present)), True
    else:
        non_null = agg.get("non_null")
        if non_null is None:
            non_null = round(len(present) / sample_n * rows) if sample_n else 0
        distinct = agg.get("distinct")
        if distinct is None:
            distinct = estimate_distinct(Counter(present), len(present), non_null)
        exact = "non_null" in agg and "distinct" in agg
    non_null, distinct = int(non_null), int(distinct)
    return {
        "row_count": rows,
        "non_null_count": non_null,
        "null_count": rows - non_null,
        "null_fraction": share(rows - non_null, rows),
        "distinct_count": distinct,
        "distinct_ratio": share(distinct, non_null),
        "counts_exact": exact,
        "sample_size": sample_n,
        "sampled": not inp.whole_table,
    }


def numeric_statistics(
    facts: ValueFacts, agg: dict[str, Any], whole_table: bool, kind: str | None = None
) -> dict[str, Any]:
    """Mean, min, quartiles, max, standard deviation and integer-or-float of the numbers.

    ``kind`` is ``integer`` or ``float`` from the declared type; None decides by the values.

    Min, max and mean are exact (``exact``) when the sample is the whole table or SQL gave
    them; quartiles are exact only for the whole table (``quartiles_exact``).
    """
    numbers = facts.numbers
    stats: dict[str, Any] = {"kind": kind or ("integer" if facts.integer else "float")}
    if not numbers:
        keys = ("mean", "min", "p25", "p50", "p75", "max", "std")
        return {**stats, **dict.fromkeys(keys), "exact": whole_table, "quartiles_exact": False}
    array = np.fromiter(numbers, dtype=float, count=len(numbers))
    p25, p50, p75 = (rounded(float(q)) for q in np.percentile(array, [25, 50, 75]))
    low, high, mean = min(numbers), max(numbers), float(array.mean())
    exact = whole_table
    if not whole_table and not facts.numeric_text:
        sql = [_number(agg.get(name)) for name in ("min", "max", "avg")]
        if all(v is not None for v in sql):
            low, high, mean = sql  # type: ignore[assignment]
            exact = True
    stats.update(
        mean=rounded(mean),
        min=_number(low),
        p25=p25,
        p50=p50,
        p75=p75,
        max=_number(high),
        std=rounded(float(array.std())),
        exact=exact,
        quartiles_exact=whole_table,
    )
    return stats


def temporal_statistics(
    facts: ValueFacts, agg: dict[str, Any], whole_table: bool
) -> dict[str, Any]:
    """Detected format, and min/max as real datetimes printed in that format and in ISO."""
    found = facts.temporal
    fmt: str | None = None
    source: str | None = None
    ambiguous: tuple[str, ...] = ()
    low: Any = None
    high: Any = None
    exact = whole_table
    if found is not None:
        fmt, source, ambiguous = found.format, "detected", found.ambiguous_with
        low, high = found.minimum, found.maximum
        if not whole_table and found.sortable:
            ends = [parse(str(agg.get(k) or "").strip(), fmt) for k in ("min", "max")]
            if ends[0] is not None and ends[1] is not None:
                low, high, exact = min(low, ends[0]), max(high, ends[1]), True
    else:
        values = comparable(v for v in facts.values if isinstance(v, (dt.date, dt.time)))
        if values:
            low, high = min(values), max(values)
            known = comparable([low, high, *(agg[k] for k in ("min", "max") if agg.get(k))])
            if not whole_table and len(known) == 4:
                low, high, exact = min(known), max(known), True
            fmt, source = native_format(low), "type"
    shown_in = fmt if low is not None else None  # the format min and max are shown in
    shown = shown_in is not None
    return {
        "format": fmt,
        "format_source": source,
        "ambiguous_with": list(ambiguous),
        "min": display(low, shown_in) if shown_in is not None else None,
        "max": display(high, shown_in) if shown_in is not None else None,
        "min_iso": iso(low, shown_in) if shown_in is not None else None,
        "max_iso": iso(high, shown_in) if shown_in is not None else None,
        "exact": exact and shown,
    }


def _identifier_statistics(
    facts: ValueFacts, counts: dict[str, Any], inp: ColumnInput
) -> dict[str, Any]:
    stats: dict[str, Any] = {"unique": counts["distinct_count"] >= counts["non_null_count"]}
    if facts.numbers and facts.integer:
        low, high = min(facts.numbers), max(facts.numbers)
        if not inp.whole_table and not facts.numeric_text:
            sql_low, sql_high = (_number(inp.aggregates.get(k)) for k in ("min", "max"))
            low = low if sql_low is None else sql_low
            high = high if sql_high is None else sql_high
        stats.update(min=low, max=high)
    strings = facts.strings
    if strings:
        stats["max_length"] = _max_length(strings, inp)
    return stats


def _max_length(strings: list[Any], inp: ColumnInput) -> int:
    from_sql = inp.aggregates.get("max_length")
    if not inp.whole_table and isinstance(from_sql, int):
        return from_sql
    return max(len(str(v)) for v in strings)


def _add_values(
    profile: ColumnProfile, inp: ColumnInput, present: list[Any], options: ProfileOptions
) -> None:
    """Top values with frequencies, lengths and (categorical columns) enum values."""
    stats = profile.statistics
    categorical = profile.semantic_type == "categorical"
    wanted = max(options.top_k, options.enum_max_distinct + 1) if categorical else options.top_k
    top = None if inp.whole_table or inp.top_values is None else inp.top_values(wanted)
    exact = inp.whole_table or top is not None
    if top is None:
        counter = Counter(present)
        ranked = sorted(counter.items(), key=lambda item: (-item[1], str(item[0])))
        top = ranked[:wanted]
    else:
        top = [(normalize_value(value), count) for value, count in top]
    total = stats["non_null_count"] if exact else len(present)
    shown, running = [], 0
    for value, count in top[: options.top_k]:
        running += count
        shown.append(
            {
                "value": _shown(value),
                "count": count,
                "frequency": share(count, total),
                "cumulative_frequency": share(running, total),
            }
        )
    lengths = [len(str(v)) for v in present]
    stats["values"] = {
        "classes": stats["distinct_count"],
        "top": shown,
        "max_length": _max_length(present, inp) if present else 0,
        "mean_length": rounded(sum(lengths) / len(lengths)) if lengths else 0.0,
        "exact": exact,
    }
    profile.examples = [item["value"] for item in shown[: options.examples]]
    limit = options.enum_max_distinct
    if categorical and stats["distinct_count"] <= limit and len(top) <= limit:
        profile.enum_values = [(to_jsonable(v), c, share(c, total)) for v, c in top]
