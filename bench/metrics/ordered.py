"""Maximum-weight non-crossing matching of rows, for results with ORDER BY.

The matched pairs must keep their order on both sides (i < i' ⇔ j < j'), which is a weighted
longest common subsequence:

    dp[i][j] = max(dp[i-1][j], dp[i][j-1], dp[i-1][j-1] + w(i, j)).

Two exact evaluations, picked by how many row pairs share a value at all:

* few such pairs (typical: ids, names, amounts): a sparse chain DP over the positive-weight
  pairs, O(E log m) with a Fenwick tree of prefix maxima;
* many (a low-cardinality column links most pairs): the full DP, one numpy-vectorised row at a
  time, O(n·m) arithmetic without a Python loop over cells.

Identical rows are *not* pre-matched here: unlike in the unordered case, taking an identical
pair can block a better one (pred [x, y] against gold [y, x] can only keep one of the two).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bench.metrics.normalize import Row
from bench.metrics.tokens import TokenizedRows, pair_f_beta, tokenize

SPARSE_CELL_RATIO = 500
"""Use the sparse chain DP when candidate pairs × this ratio ≤ n × m (a Python step per pair
costs a few hundred times a vectorised cell)."""

BLOCK_CELLS = 1 << 21
"""Cells of the overlap matrix materialised at once by the dense DP."""


def ordered_total(pred: Sequence[Row], gold: Sequence[Row], beta: float) -> float:
    """Largest sum of row F-β over order-preserving matchings of ``pred`` to ``gold``.

    Args:
        pred: Normalised predicted rows, in result order.
        gold: Normalised gold rows, in result order.
        beta: The F-β parameter.

    Returns:
        The total weight of the best non-crossing matching (not yet divided by the row count).
    """
    if not pred or not gold:
        return 0.0
    tokens = tokenize(pred, gold)
    if tokens.pair_bound() * SPARSE_CELL_RATIO <= len(pred) * len(gold):
        return _sparse_chain(tokens, beta)
    return _dense_rows(tokens, beta)


def _sparse_chain(tokens: TokenizedRows, beta: float) -> float:
    """Heaviest chain of pairs strictly increasing in both i and j.

    Pairs are visited by i ascending and, within one i, by j descending, so pairs of the same
    predicted row never extend each other. ``tree`` is a Fenwick tree over gold positions whose
    prefix maximum is the best chain ending before a given gold row.
    """
    overlaps = tokens.overlaps()
    if overlaps.nnz == 0:
        return 0.0
    rows, cols = overlaps.row, overlaps.col
    weights = pair_f_beta(overlaps.data, tokens.pred_sizes[rows], tokens.gold_sizes[cols], beta)
    order = np.lexsort((-cols, rows))
    m = tokens.gold.shape[0]
    tree = [0.0] * (m + 1)
    best = 0.0
    for j, w in zip(cols[order].tolist(), weights[order].tolist(), strict=True):
        k, before = j, 0.0  # max over gold positions 1..j, i.e. gold rows < j
        while k > 0:
            if tree[k] > before:
                before = tree[k]
            k &= k - 1
        value = before + w
        if value > best:
            best = value
        k = j + 1
        while k <= m and tree[k] < value:
            # A node covers a sub-range of the next node on the update path, so once a node
            # already holds ``value`` all the following ones do too.
            tree[k] = value
            k += k & -k
    return best


def _dense_rows(tokens: TokenizedRows, beta: float) -> float:
    """The full DP, a row at a time: with t[j] = max(dp[i-1][j], dp[i-1][j-1] + w(i, j)),
    dp[i][j] = max(t[j], dp[i][j-1]) is the running maximum of t."""
    n, m = tokens.pred.shape[0], tokens.gold.shape[0]
    gold_t = tokens.gold.T.tocsr()
    dp = np.zeros(m + 1)
    step = max(1, BLOCK_CELLS // m)
    for start in range(0, n, step):
        block = slice(start, min(n, start + step))
        overlap = (tokens.pred[block] @ gold_t).toarray()
        weights = pair_f_beta(
            overlap, tokens.pred_sizes[block, None], tokens.gold_sizes[None, :], beta
        )
        for w in weights:
            t = np.maximum(dp[1:], dp[:-1] + w)
            np.maximum.accumulate(t, out=dp[1:])
    return float(dp[m])
