"""Execution metrics: EX, Spider's execution match, BIRD's soft-F1 and Bipartite F-β.

Expected values are computed by hand in the comments next to them.
"""

import random
from collections import Counter
from decimal import Decimal

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from bench.metrics import (
    bipartite_f_beta,
    execution_accuracy,
    normalize_rows,
    normalize_value,
    ordered,
    score_all,
    soft_f1,
    spider_execution_match,
    unordered,
)

GOLD = [(1, "a"), (2, "b")]


# --- Cell values --------------------------------------------------------------------------------


def test_integers_and_integral_floats_are_one_value():
    assert normalize_value(1) == normalize_value(1.0) == normalize_value(Decimal("1.00"))
    assert normalize_value(np.int64(7)) == normalize_value(np.float32(7.0)) == 7


def test_floats_match_to_ten_significant_digits():
    assert normalize_value(0.1 + 0.2) == normalize_value(0.3)
    assert normalize_value(2 / 3) == normalize_value(0.66666666667)
    assert normalize_value(1e-12) == normalize_value(0.0)  # below the absolute tolerance
    assert normalize_value(1.001) != normalize_value(1.0)
    assert normalize_value(1.0000001) != normalize_value(1.0)


def test_numeric_strings_stay_strings_and_none_matches_only_none():
    assert normalize_value("1") != normalize_value(1)
    assert normalize_value(None) is None
    assert normalize_value("None") is not None


def test_booleans_are_integers_bytes_are_hex_and_nan_matches_nan():
    assert normalize_value(True) == 1 and normalize_value(np.bool_(False)) == 0
    assert normalize_value(b"\x01\xff") == "01ff"
    assert normalize_value(float("nan")) == normalize_value(Decimal("NaN"))
    assert normalize_value([1, 2.0]) == (1, 2)


# --- EX (BIRD) ----------------------------------------------------------------------------------


def test_ex_is_set_equality_of_rows():
    assert execution_accuracy([(2, "b"), (1, "a")], GOLD)  # order ignored
    assert execution_accuracy([(1, "a"), (1, "a"), (2, "b")], GOLD)  # duplicates ignored
    assert not execution_accuracy([("a", 1), ("b", 2)], GOLD)  # columns are not permuted
    assert not execution_accuracy([(1, "a")], GOLD)


def test_ex_compares_normalised_values():
    assert execution_accuracy([(0.1 + 0.2, None)], [(0.3, None)])
    assert execution_accuracy([(1.0, "a"), (2.0, "b")], GOLD)
    assert not execution_accuracy([("1", "a"), ("2", "b")], GOLD)


def test_ex_of_empty_results():
    assert execution_accuracy([], [])
    assert not execution_accuracy([], GOLD)


# --- Spider execution match ---------------------------------------------------------------------


def test_spider_allows_a_permutation_of_the_predicted_columns():
    assert spider_execution_match([("a", 1), ("b", 2)], GOLD, order_relevant=False)
    assert spider_execution_match([("a", 1), ("b", 2)], GOLD, order_relevant=True)


def test_spider_needs_whole_rows_to_match_not_just_columns():
    # Both columns hold the right values ({1, 2} and {a, b}), but paired the wrong way.
    assert not spider_execution_match([(1, "b"), (2, "a")], GOLD, order_relevant=False)


def test_spider_searches_past_a_first_failing_permutation():
    gold = [(1, 2, "x"), (2, 1, "y")]
    # Columns 0 and 1 both hold {1, 2}; only "gold 0 <- pred 1, gold 1 <- pred 0" works.
    pred = [(2, 1, "x"), (1, 2, "y")]
    assert spider_execution_match(pred, gold, order_relevant=False)
    assert spider_execution_match(pred, gold, order_relevant=True)


def test_spider_tries_interchangeable_columns_once():
    # Twelve equal predicted columns; gold differs only in its last column. Trying all 12!
    # assignments would never finish; equal columns lead to the same state and are tried once.
    pred = [(1,) * 12, (2,) * 12]
    gold = [(1,) * 11 + (2,), (2,) * 11 + (1,)]
    assert not spider_execution_match(pred, gold, order_relevant=False)
    assert spider_execution_match(pred, pred[::-1], order_relevant=False)


def test_spider_compares_bags_not_sets():
    assert not spider_execution_match([(1,), (2,), (2,)], [(1,), (1,), (2,)], False)
    assert not spider_execution_match([(1,), (1,), (2,)], [(1,), (2,)], False)
    assert execution_accuracy([(1,), (2,), (2,)], [(1,), (1,), (2,)])  # EX only sees sets


def test_spider_compares_order_only_when_the_gold_query_orders():
    assert spider_execution_match([(2, "b"), (1, "a")], GOLD, order_relevant=False)
    assert not spider_execution_match([(2, "b"), (1, "a")], GOLD, order_relevant=True)


def test_spider_tolerates_float_noise_and_matches_none():
    assert spider_execution_match([(0.1 + 0.2, None)], [(None, 0.3)], order_relevant=False)
    assert not spider_execution_match([("0.3", None)], [(None, 0.3)], order_relevant=False)


def test_spider_rejects_other_row_or_column_counts():
    assert not spider_execution_match([(1, "a", "x"), (2, "b", "y")], GOLD, False)
    assert not spider_execution_match([(1, "a")], GOLD, False)
    assert spider_execution_match([], [], False)
    assert not spider_execution_match([], GOLD, False)


# --- Soft-F1 (BIRD mini-dev) --------------------------------------------------------------------
#
# Rows are de-duplicated and paired by position. Per pair, with k the gold row's width:
# matched = pred values in the gold row / k, pred_only = the others / k, gold_only = gold values
# missing from the pred row / k; an unpaired pred row adds pred_only 1, an unpaired gold row
# gold_only 1. tp, fp, fn are the sums; F1 = 2PR / (P + R), P = tp/(tp+fp), R = tp/(tp+fn).


@pytest.mark.parametrize(
    ("pred", "expected"),
    [
        # Each row: 2 of 2 values found. tp = 2, fp = fn = 0.
        pytest.param([("a", 1), ("b", 2)], 1.0, id="swapped columns"),
        # (2,'b') vs (1,'a') and (1,'a') vs (2,'b') share nothing. tp = 0.
        pytest.param([(2, "b"), (1, "a")], 0.0, id="reordered rows"),
        # Each row: matched 1/2, gold_only 1/2. tp = 1, fn = 1: P = 1, R = 1/2, F1 = 2/3.
        pytest.param([(1,), (2,)], 2 / 3, id="missing column"),
        # Each row: matched 2/2, pred_only 1/2. tp = 2, fp = 1: P = 2/3, R = 1, F1 = 4/5.
        pytest.param([(1, "a", "x"), (2, "b", "y")], 0.8, id="extra column"),
        # Two perfect rows and an unpaired pred row. tp = 2, fp = 1: F1 = 4/5.
        pytest.param([(1, "a"), (2, "b"), (3, "c")], 0.8, id="extra row"),
        # One perfect row and an unpaired gold row. tp = 1, fn = 1: F1 = 2/3.
        pytest.param([(1, "a")], 2 / 3, id="missing row"),
        # De-duplication leaves exactly the gold rows.
        pytest.param([(1, "a"), (1, "a"), (2, "b")], 1.0, id="duplicate predicted rows"),
        # 1.0 and 1 are one value.
        pytest.param([(1.0, "a"), (2.0, "b")], 1.0, id="1 vs 1.0"),
    ],
)
def test_soft_f1(pred, expected):
    assert soft_f1(pred, GOLD) == pytest.approx(expected)


def test_soft_f1_of_empty_results():
    assert soft_f1([], []) == 1.0
    assert soft_f1([], GOLD) == 0.0
    assert soft_f1(GOLD, []) == 0.0


# --- Bipartite F-β ------------------------------------------------------------------------------
#
# Row score for |p ∩ g| = c: P = c/|p|, R = c/|g|, F-β = (1+β²)PR / (β²P + R). The result score
# is the best one-to-one matching's summed row scores divided by max(#pred rows, #gold rows).


def test_bf_beta_of_identical_results_is_one():
    assert bipartite_f_beta(GOLD, GOLD, order_relevant=False) == 1.0
    assert bipartite_f_beta(GOLD, GOLD, order_relevant=True) == 1.0


def test_bf_beta_ignores_row_order_unless_the_gold_query_orders():
    gold = [(1, "a"), (2, "b"), (3, "c")]
    pred = [(3, "c"), (1, "a"), (2, "b")]
    assert bipartite_f_beta(pred, gold, order_relevant=False) == 1.0
    # Without crossing, (1,a) and (2,b) can be kept but not (3,c) as well: 2 / 3.
    assert bipartite_f_beta(pred, gold, order_relevant=True) == pytest.approx(2 / 3)


def test_bf_beta_charges_an_extra_summary_row():
    gold = [("north", 10), ("south", 20), ("east", 30)]
    pred = [*gold, ("total", 60)]
    # Three perfect rows; the total row shares no value with any gold row: (1+1+1+0) / 4.
    assert bipartite_f_beta(pred, gold, order_relevant=False) == pytest.approx(3 / 4)
    assert bipartite_f_beta(pred, gold, order_relevant=True) == pytest.approx(3 / 4)


def test_bf_beta_weighs_recall_more_with_larger_beta():
    pred = [(1, "a", "x"), (2, "b", "y")]  # an extra column: P = 2/3, R = 1 in every row
    # F-β = (1+β²)·(2/3) / (β²·(2/3) + 1)
    assert bipartite_f_beta(pred, GOLD, False, beta=2) == pytest.approx(10 / 11)  # 5·2/(8+3)
    assert bipartite_f_beta(pred, GOLD, False, beta=1) == pytest.approx(4 / 5)  # 2·2/(2+3)
    assert bipartite_f_beta(pred, GOLD, False, beta=0.5) == pytest.approx(5 / 7)  # 1.25·2/3.5
    # A missing column instead (P = 1, R = 1/2) costs more under β = 2: 5·(1/2) / (4 + 1/2).
    assert bipartite_f_beta([(1,), (2,)], GOLD, False) == pytest.approx(5 / 9)


def test_bf_beta_gives_partial_credit_for_a_partly_wrong_row():
    # Two of three values right: P = R = 2/3, whatever β.
    assert bipartite_f_beta([(1, "a", 99)], [(1, "a", 10)], False) == pytest.approx(2 / 3)


def test_bf_beta_counts_duplicate_rows():
    # One gold row, two predicted copies: one is matched, one is extra: 1 / 2.
    assert bipartite_f_beta([(1, "a"), (1, "a")], [(1, "a")], False) == pytest.approx(1 / 2)


def test_bf_beta_tolerates_float_noise_and_matches_none():
    assert bipartite_f_beta([(None, 0.1 + 0.2)], [(0.3, None)], False) == 1.0
    # "0.3" is a string: one of two values matches. P = R = 1/2.
    assert bipartite_f_beta([(None, "0.3")], [(None, 0.3)], False) == pytest.approx(1 / 2)


def test_bf_beta_of_empty_results():
    assert bipartite_f_beta([], [], order_relevant=False) == 1.0
    assert bipartite_f_beta([], GOLD, order_relevant=True) == 0.0
    assert bipartite_f_beta(GOLD, [], order_relevant=False) == 0.0


def test_bf_beta_on_thousands_of_rows():
    gold = [(i, f"name {i}", i % 5) for i in range(3000)]
    pred = random.Random(7).sample(gold, len(gold))
    assert bipartite_f_beta(pred, gold, order_relevant=False) == 1.0
    # An extra row sharing only its category with 600 gold rows, all taken: 3000 / 3001.
    assert bipartite_f_beta([*pred, (-1, "x", 0)], gold, False) == pytest.approx(3000 / 3001)
    # Reversed, without shared values between different rows: only one pair can be kept.
    distinct = [row[:2] for row in gold]
    assert bipartite_f_beta(distinct[::-1], distinct, True) == pytest.approx(1 / 3000)


def test_score_all_reports_every_metric():
    assert score_all([(2, "b"), (1, "a")], GOLD, order_relevant=False) == {
        "ex": 1.0,
        "spider_ex": 1.0,
        "soft_f1": 0.0,
        "bf_beta": 1.0,
    }


# --- Fast paths against a brute-force reference ---------------------------------------------------


def reference_bf_beta(pred_rows, gold_rows, order_relevant, beta):
    """The definition, literally: a dense matrix of row scores, then LSA or the O(n·m) DP."""
    pred, gold = normalize_rows(pred_rows), normalize_rows(gold_rows)
    if not pred or not gold:
        return float(not pred and not gold)

    def row_score(p, g):
        p, g = Counter(p), Counter(g)
        if not p and not g:
            return 1.0
        common = sum((p & g).values())
        if common == 0:
            return 0.0
        precision, recall = common / sum(p.values()), common / sum(g.values())
        return (1 + beta**2) * precision * recall / (beta**2 * precision + recall)

    weights = [[row_score(p, g) for g in gold] for p in pred]
    if order_relevant:
        dp = [[0.0] * (len(gold) + 1) for _ in range(len(pred) + 1)]
        for i in range(1, len(pred) + 1):
            for j in range(1, len(gold) + 1):
                dp[i][j] = max(dp[i - 1][j], dp[i][j - 1], dp[i - 1][j - 1] + weights[i - 1][j - 1])
        total = dp[-1][-1]
    else:
        matrix = np.array(weights)
        rows, cols = linear_sum_assignment(matrix, maximize=True)
        total = matrix[rows, cols].sum()
    return total / max(len(pred), len(gold))


def random_cases(seed, count):
    """Small results over tiny alphabets, so rows overlap, repeat and tie a lot."""
    rng = random.Random(seed)
    for _ in range(count):
        alphabet = [*range(rng.randint(1, 8)), "a", "b", None, 2.5]
        pred_width = rng.randint(0, 4)
        gold_width = rng.choice([pred_width, rng.randint(0, 4)])
        gold = [tuple(rng.choices(alphabet, k=gold_width)) for _ in range(rng.randint(0, 20))]
        pred = [tuple(rng.choices(alphabet, k=pred_width)) for _ in range(rng.randint(0, 20))]
        if gold and rng.random() < 0.5:  # a perturbed copy of gold, so identical rows exist
            pred = [row for row in gold if rng.random() < 0.8] + pred[:5]
            rng.shuffle(pred)
        yield pred, gold, rng.choice([0.5, 1.0, 2.0, 3.0])


UNORDERED_PATHS = {
    "anchoring + dense assignment": {},
    "anchoring + sparse ghost matching": {"DENSE_CELLS": 0},
}
ORDERED_PATHS = {
    "sparse chain DP": {"SPARSE_CELL_RATIO": 0},
    "vectorised row DP": {"SPARSE_CELL_RATIO": 10**9, "BLOCK_CELLS": 7},
}


@pytest.mark.parametrize("settings", UNORDERED_PATHS.values(), ids=UNORDERED_PATHS.keys())
def test_unordered_fast_paths_equal_the_reference(monkeypatch, settings):
    for name, value in settings.items():
        monkeypatch.setattr(unordered, name, value)
    for pred, gold, beta in random_cases(seed=1, count=300):
        expected = reference_bf_beta(pred, gold, False, beta)
        assert bipartite_f_beta(pred, gold, False, beta) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("settings", ORDERED_PATHS.values(), ids=ORDERED_PATHS.keys())
def test_ordered_fast_paths_equal_the_reference(monkeypatch, settings):
    for name, value in settings.items():
        monkeypatch.setattr(ordered, name, value)
    for pred, gold, beta in random_cases(seed=2, count=300):
        expected = reference_bf_beta(pred, gold, True, beta)
        assert bipartite_f_beta(pred, gold, True, beta) == pytest.approx(expected, abs=1e-12)


def test_too_dense_a_remainder_is_solved_approximately_with_a_warning(monkeypatch):
    monkeypatch.setattr(unordered, "DENSE_CELLS", 0)
    monkeypatch.setattr(unordered, "EDGE_BUDGET", 0)
    with pytest.warns(RuntimeWarning, match="lower bound"):
        # Each row shares its number with one gold row: two pairs of score 1/2.
        score = bipartite_f_beta([(1, "a"), (2, "a")], [(1, "b"), (2, "b")], False)
    assert score == pytest.approx(1 / 2)


@pytest.mark.filterwarnings("ignore:bipartite F-β")
def test_the_approximation_never_exceeds_the_exact_score(monkeypatch):
    monkeypatch.setattr(unordered, "DENSE_CELLS", 0)
    monkeypatch.setattr(unordered, "EDGE_BUDGET", 10)
    monkeypatch.setattr(unordered, "BLOCK_ROWS", 4)
    for pred, gold, beta in random_cases(seed=3, count=200):
        expected = reference_bf_beta(pred, gold, False, beta)
        assert bipartite_f_beta(pred, gold, False, beta) <= expected + 1e-12
