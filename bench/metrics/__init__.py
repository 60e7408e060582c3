"""Execution-based metrics comparing a predicted query result with the gold one.

* ``execution_accuracy``: BIRD's EX, set equality of rows.
* ``spider_execution_match``: Spider's bag equality with column permutations.
* ``soft_f1``: BIRD mini-dev's soft-F1, rows paired by position.
* ``bipartite_f_beta``: RubikSQL's Bipartite F-β, rows matched one to one.

All of them compare cells through ``normalize_value``.
"""

from __future__ import annotations

from bench.metrics.bipartite import bipartite_f_beta
from bench.metrics.exact import execution_accuracy, spider_execution_match
from bench.metrics.normalize import Result, normalize_row, normalize_rows, normalize_value
from bench.metrics.soft_f1 import soft_f1


def score_all(pred_rows: Result, gold_rows: Result, order_relevant: bool) -> dict[str, float]:
    """Every metric for one prediction.

    Args:
        pred_rows: Rows of the predicted query.
        gold_rows: Rows of the gold query.
        order_relevant: Whether the gold query orders its rows (it has an ORDER BY).

    Returns:
        ``{"ex", "spider_ex", "soft_f1", "bf_beta"}`` as floats in [0, 1] (β = 2).
    """
    return {
        "ex": float(execution_accuracy(pred_rows, gold_rows)),
        "spider_ex": float(spider_execution_match(pred_rows, gold_rows, order_relevant)),
        "soft_f1": soft_f1(pred_rows, gold_rows),
        "bf_beta": bipartite_f_beta(pred_rows, gold_rows, order_relevant),
    }


__all__ = [
    "Result",
    "bipartite_f_beta",
    "execution_accuracy",
    "normalize_row",
    "normalize_rows",
    "normalize_value",
    "score_all",
    "soft_f1",
    "spider_execution_match",
]
