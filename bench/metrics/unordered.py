"""Maximum-weight matching of predicted rows to gold rows, for results without ORDER BY.

Pipeline:

1. Identical rows are matched to each other first (``_anchor_identical``).
2. The remaining rows are tokenised; only pairs sharing a value can have a positive weight.
3. The remainder is solved exactly: densely with ``linear_sum_assignment`` when it is small,
   otherwise on the sparse graph of candidate pairs with ``min_weight_full_bipartite_matching``.
4. A remainder that is both large and dense (say 10,000 rows on each side that all share one
   category value) has too many candidate pairs for an exact solve; ``_approximate`` then
   returns the weight of a good matching, a lower bound, and warns.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Hashable, Sequence

import numpy as np
from scipy import sparse
from scipy.optimize import linear_sum_assignment
from scipy.sparse.csgraph import min_weight_full_bipartite_matching

from bench.metrics.normalize import Row
from bench.metrics.tokens import TokenizedRows, pair_f_beta, tokenize

DENSE_CELLS = 4_000_000
"""Solve densely when (remaining predicted rows) × (remaining gold rows) is at most this."""

EDGE_BUDGET = 3_000_000
"""Largest number of candidate pairs given to the sparse exact solver."""

BLOCK_ROWS = 2_000
"""Block size of the approximate fallback's dense solves."""


def unordered_total(pred: Sequence[Row], gold: Sequence[Row], beta: float) -> float:
    """Largest sum of row F-β over matchings of ``pred`` rows to ``gold`` rows.

    Args:
        pred: Normalised predicted rows.
        gold: Normalised gold rows.
        beta: The F-β parameter.

    Returns:
        The total weight of a maximum-weight matching (not yet divided by the row count).
    """
    anchored, pred_rest, gold_rest = _anchor_identical(pred, gold)
    if not pred_rest or not gold_rest:
        return float(anchored)
    tokens = tokenize(pred_rest, gold_rest)
    return anchored + _solve(tokens, pred_rest, gold_rest, beta)


def _anchor_identical(pred: Sequence[Row], gold: Sequence[Row]) -> tuple[int, list[Row], list[Row]]:
    """Match rows holding the same multiset of values; return their count and the rest.

    Why this is optimal: in a SQL result every row has the same width k, so the weight of a pair
    is w(p, g) = |p ∩ g| / k (``pair_f_beta`` with |p| = |g| = k). For multisets,
    |A ∩ C| ≥ |A ∩ B| + |B ∩ C| − |B| (check it value by value). Take an optimal matching in
    which identical rows p ≡ g are not matched together, p with g' and p' with g. Swapping to
    (p, g) and (p', g') changes the weight by 1 + w(p', g') − w(p, g') − w(p', g) ≥ 0, using the
    inequality with B = p = g (and a missing partner only makes the swap better). Repeating the
    swap yields an optimal matching containing min(#p, #g) identical pairs of every kind, and
    identical rows are interchangeable. Results with ragged rows are not anchored.
    """
    if len({len(row) for row in pred} | {len(row) for row in gold}) != 1:
        return 0, list(pred), list(gold)
    pred_keys = [_bag_key(row) for row in pred]
    gold_keys = [_bag_key(row) for row in gold]
    common = Counter(pred_keys) & Counter(gold_keys)
    return (
        sum(common.values()),
        _without(pred, pred_keys, common),
        _without(gold, gold_keys, common),
    )


def _bag_key(row: Row) -> Hashable:
    if len(set(row)) == len(row):
        return frozenset(row)
    return (frozenset(Counter(row).items()),)


def _without(rows: Sequence[Row], keys: list[Hashable], quota: Counter[Hashable]) -> list[Row]:
    left = Counter(quota)
    rest = []
    for row, key in zip(rows, keys, strict=True):
        if left[key] > 0:
            left[key] -= 1
        else:
            rest.append(row)
    return rest


def _solve(tokens: TokenizedRows, pred: Sequence[Row], gold: Sequence[Row], beta: float) -> float:
    n, m = len(pred), len(gold)
    if n * m <= DENSE_CELLS:
        return _solve_dense(tokens, beta)
    if tokens.pair_bound() <= EDGE_BUDGET:
        overlaps = tokens.overlaps()
        rows, cols = overlaps.row, overlaps.col
        weights = pair_f_beta(overlaps.data, tokens.pred_sizes[rows], tokens.gold_sizes[cols], beta)
        return _solve_sparse(rows, cols, weights)
    return _approximate(tokens, pred, gold, beta)


def _solve_dense(tokens: TokenizedRows, beta: float) -> float:
    overlap = (tokens.pred @ tokens.gold.T).toarray()
    weights = pair_f_beta(overlap, tokens.pred_sizes[:, None], tokens.gold_sizes[None, :], beta)
    rows, cols = linear_sum_assignment(weights, maximize=True)
    return float(weights[rows, cols].sum())


def _solve_sparse(rows: np.ndarray, cols: np.ndarray, weights: np.ndarray) -> float:
    """Maximum-weight matching on the sparse graph of positive-weight pairs."""
    if len(weights) == 0:
        return 0.0
    pred_ids, rows = np.unique(rows, return_inverse=True)  # drop rows without candidates
    gold_ids, cols = np.unique(cols, return_inverse=True)
    n, m = len(pred_ids), len(gold_ids)
    if n * m <= DENSE_CELLS:
        dense = np.zeros((n, m))
        dense[rows, cols] = weights
        r, c = linear_sum_assignment(dense, maximize=True)
        return float(dense[r, c].sum())
    return _ghost_matching(rows, cols, weights, n, m)[2]


def _ghost_matching(
    rows: np.ndarray, cols: np.ndarray, weights: np.ndarray, n: int, m: int
) -> tuple[np.ndarray, np.ndarray, float]:
    """Maximum-weight matching of a sparse n × m graph; returns matched pairs and weight.

    ``min_weight_full_bipartite_matching`` needs a matching that covers the smaller side, which
    the graph may lack. So it is given the graph doubled with ghosts: left nodes are the
    predicted rows plus one ghost per gold row, right nodes the gold rows plus one ghost per
    predicted row. Edges: p–g for every candidate pair (cost C − w), p–ghost(p) and ghost(g)–g
    ("left unmatched", cost C), and ghost(g)–ghost(p) for every candidate pair (cost C), which
    pairs up the ghosts of a matched pair. A perfect matching always exists, every perfect
    matching has n + m edges, and its real edges form a matching of weight C·(n + m) − cost;
    conversely every matching extends to a perfect one. With C = 2 > w all costs are
    positive, as the solver requires (it reads zeros as missing edges).
    """
    cost = 2.0
    left = np.concatenate([rows, np.arange(n), n + np.arange(m), n + cols])
    right = np.concatenate([cols, m + np.arange(n), np.arange(m), m + rows])
    data = np.concatenate([cost - weights, np.full(n + m + len(weights), cost)])
    graph = sparse.csr_array((data, (left, right)), shape=(n + m, n + m))
    r, c = min_weight_full_bipartite_matching(graph)
    real = (r < n) & (c < m)
    return r[real], c[real], float(cost * (n + m) - graph[r, c].sum())


def _approximate(
    tokens: TokenizedRows, pred: Sequence[Row], gold: Sequence[Row], beta: float
) -> float:
    """Lower bound for a remainder too large and dense for an exact solve.

    Stage 1 solves exactly on the pairs sharing a *rare* value (the rarest values are kept
    while the pair count fits ``EDGE_BUDGET``), with their full weights. Stage 2 sorts the rows
    left unmatched and solves aligned blocks of ``BLOCK_ROWS`` rows densely.
    """
    warnings.warn(
        f"bipartite F-β: {len(pred)}×{len(gold)} unmatched rows share too many values for an "
        "exact matching; the score is a lower bound",
        RuntimeWarning,
        stacklevel=5,
    )
    df_pred = np.bincount(tokens.pred.indices, minlength=tokens.pred.shape[1])
    df_gold = np.bincount(tokens.gold.indices, minlength=tokens.gold.shape[1])
    pairs = df_pred.astype(np.int64) * df_gold
    by_rarity = np.argsort(pairs, kind="stable")
    rare = np.zeros(len(pairs), dtype=bool)
    rare[by_rarity[np.cumsum(pairs[by_rarity]) <= EDGE_BUDGET]] = True
    candidates = sparse.coo_array(
        tokens.pred @ sparse.diags_array(rare.astype(np.float64)) @ tokens.gold.T
    )
    rows, cols = candidates.row, candidates.col
    pred_frequent = _padded_tokens(tokens.pred, ~rare, fill=-1)[rows]
    gold_frequent = _padded_tokens(tokens.gold, ~rare, fill=-2)[cols]
    overlap = candidates.data.copy()
    for k in range(pred_frequent.shape[1]):
        overlap += (pred_frequent[:, k, None] == gold_frequent).sum(axis=1)
    weights = pair_f_beta(overlap, tokens.pred_sizes[rows], tokens.gold_sizes[cols], beta)
    matched_rows, matched_cols, total = _ghost_matching(rows, cols, weights, len(pred), len(gold))
    pred_left = sorted(
        np.setdiff1d(np.arange(len(pred)), matched_rows), key=lambda i: tuple(map(repr, pred[i]))
    )
    gold_left = sorted(
        np.setdiff1d(np.arange(len(gold)), matched_cols), key=lambda j: tuple(map(repr, gold[j]))
    )
    blocks = max(1, -(-max(len(pred_left), len(gold_left)) // BLOCK_ROWS))
    for p_block, g_block in zip(
        np.array_split(np.asarray(pred_left, dtype=np.int64), blocks),
        np.array_split(np.asarray(gold_left, dtype=np.int64), blocks),
        strict=True,
    ):
        if len(p_block) and len(g_block):
            sub = TokenizedRows(
                tokens.pred[p_block],
                tokens.gold[g_block],
                tokens.pred_sizes[p_block],
                tokens.gold_sizes[g_block],
            )
            total += _solve_dense(sub, beta)
    return total


def _padded_tokens(matrix: sparse.csr_array, keep: np.ndarray, fill: int) -> np.ndarray:
    """Each row's token ids among ``keep``, as a rectangular array padded with ``fill``."""
    owner = np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr))
    selected = keep[matrix.indices]
    ids, owner = matrix.indices[selected], owner[selected]
    counts = np.bincount(owner, minlength=matrix.shape[0])
    padded = np.full((matrix.shape[0], int(counts.max(initial=0))), fill, dtype=np.int64)
    starts = np.cumsum(counts) - counts
    padded[owner, np.arange(len(ids)) - starts[owner]] = ids
    return padded
