"""Exact-match metrics: BIRD's execution accuracy and Spider's execution match."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from bench.metrics.normalize import Result, Row, normalize_rows


def execution_accuracy(pred_rows: Result, gold_rows: Result) -> bool:
    """BIRD's EX: the two results hold the same *set* of rows.

    Row order, duplicate rows and nothing else are ignored; columns must be in the same order.

    Args:
        pred_rows: Rows of the predicted query.
        gold_rows: Rows of the gold query.

    Returns:
        ``set(pred) == set(gold)`` on normalised rows.
    """
    return set(normalize_rows(pred_rows)) == set(normalize_rows(gold_rows))


def spider_execution_match(pred_rows: Result, gold_rows: Result, order_relevant: bool) -> bool:
    """Spider's execution match (as in the test-suite evaluation).

    The results match when some permutation of the predicted columns makes the two results
    equal as *bags* of rows (duplicates count), or as *lists* of rows when the gold query has an
    ORDER BY.

    Args:
        pred_rows: Rows of the predicted query.
        gold_rows: Rows of the gold query.
        order_relevant: Whether the gold query orders its rows, so row order must agree.

    Returns:
        Whether the results match.
    """
    pred = normalize_rows(pred_rows)
    gold = normalize_rows(gold_rows)
    if len(pred) != len(gold):
        return False
    if not gold:
        return True
    widths = {len(row) for row in pred} | {len(row) for row in gold}
    if len(widths) != 1 or widths == {0}:  # ragged or empty rows: no columns to permute
        return pred == gold if order_relevant else Counter(pred) == Counter(gold)
    pred_cols = list(zip(*pred, strict=True))
    gold_cols = list(zip(*gold, strict=True))
    if order_relevant:
        # Row i must equal row i, so each gold column must equal some predicted column as a
        # whole sequence; equal sequences are interchangeable.
        return Counter(pred_cols) == Counter(gold_cols)
    return _permutation_matches(pred_cols, gold_cols)


def _permutation_matches(pred_cols: list[Row], gold_cols: list[Row]) -> bool:
    """Search column permutations for one making the bags of rows equal.

    Gold column j may only take a predicted column with the same multiset of values. Columns
    are assigned one at a time (fewest candidates first) and a branch is cut as soon as the
    bags of *partial* rows (the columns assigned so far) differ. Candidates that are equal
    sequences lead to the same state, so only one of them is tried.
    """

    def bag_key(col: Row) -> frozenset[tuple[Any, int]]:
        return frozenset(Counter(col).items())

    pred_keys = [bag_key(col) for col in pred_cols]
    candidates = [
        [q for q, key in enumerate(pred_keys) if key == bag_key(col)] for col in gold_cols
    ]
    if not all(candidates):
        return False
    order = sorted(range(len(gold_cols)), key=lambda j: len(candidates[j]))
    n_rows = len(gold_cols[0])

    def search(depth: int, used: set[int], pred_part: list[Row], gold_part: list[Row]) -> bool:
        if depth == len(order):
            return True
        j = order[depth]
        gold_next = _extend(gold_part, gold_cols[j])
        tried: set[Sequence[Any]] = set()
        for q in candidates[j]:
            if q in used or pred_cols[q] in tried:
                continue
            tried.add(pred_cols[q])
            pred_next = _extend(pred_part, pred_cols[q])
            if Counter(pred_next) == Counter(gold_next) and search(
                depth + 1, used | {q}, pred_next, gold_next
            ):
                return True
        return False

    empty: list[Row] = [() for _ in range(n_rows)]
    return search(0, set(), empty, empty)


def _extend(partial_rows: list[Row], column: Row) -> list[Row]:
    return [(*row, value) for row, value in zip(partial_rows, column, strict=True)]
