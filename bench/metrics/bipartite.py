"""RubikSQL's Bipartite F-β (Chen et al. 2025, equations 5–8)."""

from __future__ import annotations

from bench.metrics.normalize import Result, normalize_rows
from bench.metrics.ordered import ordered_total
from bench.metrics.unordered import unordered_total


def bipartite_f_beta(
    pred_rows: Result, gold_rows: Result, order_relevant: bool, beta: float = 2.0
) -> float:
    """Bipartite F-β: partial credit for rows, matched one to one.

    Each row is a multiset of normalised values. For a predicted row p and a gold row g,
    P = |p ∩ g| / |p|, R = |p ∩ g| / |g| and the row score is
    (1 + β²)·P·R / (β²·P + R), 0 when both are 0. Predicted rows are matched one to one with
    gold rows to maximise the summed row scores: any matching when the result is unordered
    (maximum-weight bipartite matching), an order-preserving one when the gold query has an
    ORDER BY (non-crossing matching). The score is that sum divided by the larger row count,
    so missing and extra rows both cost. β > 1 weighs recall more: a prediction with extra
    columns loses less than one with missing columns.

    Args:
        pred_rows: Rows of the predicted query.
        gold_rows: Rows of the gold query.
        order_relevant: Whether the gold query orders its rows.
        beta: The F-β parameter; 2 by default.

    Returns:
        The score in [0, 1]: 1 when both results are empty, 0 when exactly one is.
    """
    pred = normalize_rows(pred_rows)
    gold = normalize_rows(gold_rows)
    if not pred and not gold:
        return 1.0
    if not pred or not gold:
        return 0.0
    total = ordered_total if order_relevant else unordered_total
    return min(1.0, total(pred, gold, beta) / max(len(pred), len(gold)))
