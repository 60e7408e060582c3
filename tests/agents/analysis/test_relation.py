"""How one measure moves with another (InsightBench flag-39: cheaper expenses wait longer):
the planted relation is found with its direction and quarters, independent columns are said
to have none, identifiers are not related, and the result gets a scatter chart."""

from __future__ import annotations

import numpy as np
import pytest

from agents.analysis.charts import chart_spec, render_png
from agents.analysis.compute import compute_facts
from agents.analysis.models import Evidence
from agents.analysis.tools import frame, related_columns, relation


def expenses(slope: float, seed: int = 3, n: int = 200) -> list[list[float]]:
    """``n`` expenses (id, amount, processing days): days = 20 + slope * amount / 1000 + noise."""
    rng = np.random.default_rng(seed)
    amounts = rng.uniform(10, 5000, n)
    days = 20 + slope * amounts / 1000 + rng.normal(0, 2, n)
    pairs = enumerate(zip(amounts, days, strict=True))
    return [[i + 1, round(a, 2), round(max(d, 0.1), 2)] for i, (a, d) in pairs]


def test_a_planted_falling_relation_is_found_with_its_quarters():
    df = frame(["expense_id", "amount", "processing_days"], expenses(slope=-3.0))
    found = relation(df, "amount", "processing_days")
    assert found.monotonic and found.rho < -0.8 and found.p_value < 0.001 and found.count == 200
    assert found.low_mean_y > found.high_mean_y + 8  # the cheapest quarter waits ~11 days more
    assert found.low_x_up_to < found.high_x_from
    text = found.summary()
    assert text.startswith("processing_days falls as amount rises (Spearman rho = ")
    assert all(n in found.numbers() for n in (found.low_mean_y, found.high_mean_y, 200))


def test_independent_columns_have_no_monotonic_relation():
    df = frame(["expense_id", "amount", "processing_days"], expenses(slope=0.0))
    found = relation(df, "amount", "processing_days")
    assert not found.monotonic
    assert found.summary().startswith("No monotonic relation between amount and processing_days")


def test_too_few_rows_or_values_are_refused():
    with pytest.raises(ValueError, match="needs 8 rows"):
        relation(frame(["a", "b"], [[1, 2], [2, 3], [3, 4]]), "a", "b")
    flat = frame(["a", "b"], [[i % 2, i] for i in range(20)])
    with pytest.raises(ValueError, match="4 values"):
        relation(flat, "a", "b")


def test_identifiers_are_not_related_and_compute_applies_the_tool():
    rows = expenses(slope=-3.0)
    df = frame(["expense_id", "amount", "processing_days"], rows)
    assert related_columns(df, "processing_days") == ["amount"]
    evidence = Evidence(
        id="q1",
        question="How does an expense's amount affect its processing time?",
        columns=["expense_id", "amount", "processing_days"],
        rows=rows,
    )
    facts, caveats = compute_facts([evidence], "diagnostic")
    (found,) = [f for f in facts if f.tool == "relation"]
    assert found.evidence == "q1" and found.x == "amount" and found.monotonic
    assert not any("no analysis applied" in c for c in caveats)
    # a handful of rows is no relation to read
    few = Evidence(id="q2", question="q", columns=["a", "b"], rows=[[1, 2], [2, 4], [3, 5]])
    facts, caveats = compute_facts([few], "diagnostic")
    assert facts == [] and any("two measures" in c for c in caveats)


def test_two_measures_get_a_scatter_chart(tmp_path):
    rows = expenses(slope=-3.0, n=30)
    spec = chart_spec(["expense_id", "amount", "processing_days"], rows, "cost and time")
    assert spec is not None and spec["mark"] == "point"
    assert spec["encoding"]["y"]["field"] == "processing_days"
    assert spec["encoding"]["x"] == {"field": "amount", "type": "quantitative"}  # not the id
    path = render_png(spec, tmp_path / "scatter.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
