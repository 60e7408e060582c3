"""BIRD mini-dev's soft-F1 (``calculate_f1_score`` in ``evaluation_f1.py``)."""

from __future__ import annotations

from itertools import zip_longest

from bench.metrics.normalize import Result, Row, normalize_rows


def soft_f1(pred_rows: Result, gold_rows: Result) -> float:
    """BIRD mini-dev's soft-F1 between two results.

    Duplicate rows are dropped (first occurrence kept) and the remaining rows are paired *by
    position*. For each pair, with ``k`` the width of the gold row:

    * matched = predicted values found in the gold row, divided by ``k``;
    * pred_only = predicted values not in the gold row, divided by ``k``;
    * gold_only = gold values not in the predicted row, divided by ``k``.

    A predicted row without a gold partner counts pred_only = 1; a gold row without a predicted
    partner counts gold_only = 1. Summing over rows gives tp, fp and fn; precision is
    tp / (tp + fp), recall tp / (tp + fn), and the score their harmonic mean. Membership is
    tested on normalised values, so ``1`` matches ``1.0``.

    Args:
        pred_rows: Rows of the predicted query.
        gold_rows: Rows of the gold query.

    Returns:
        The F1 score in [0, 1]; 1 when both results are empty.
    """
    pred = list(dict.fromkeys(normalize_rows(pred_rows)))
    gold = list(dict.fromkeys(normalize_rows(gold_rows)))
    if not pred and not gold:
        return 1.0
    tp = fp = fn = 0.0
    for pred_row, gold_row in zip_longest(pred, gold):
        if gold_row is None:
            fp += 1
        elif pred_row is None:
            fn += 1
        else:
            matched, pred_only, gold_only = _row_match(pred_row, gold_row)
            tp, fp, fn = tp + matched, fp + pred_only, fn + gold_only
    precision = tp / (tp + fp) if tp + fp > 0 else 0.0
    recall = tp / (tp + fn) if tp + fn > 0 else 0.0
    if precision + recall == 0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


def _row_match(pred_row: Row, gold_row: Row) -> tuple[float, float, float]:
    """BIRD's ``calculate_row_match``: fractions of the gold row's width."""
    width = len(gold_row) or 1  # BIRD divides by zero here; an empty row has nothing to match
    matched = sum(1 for value in pred_row if value in gold_row)
    pred_only = len(pred_row) - matched
    gold_only = sum(1 for value in gold_row if value not in pred_row)
    return matched / width, pred_only / width, gold_only / width
