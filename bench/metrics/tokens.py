"""Rows as sets of value tokens, for fast overlap counts between two results.

A row is a multiset of values. Writing its k-th copy of value ``v`` as the token ``(v, k)``
turns it into a plain set, and the multiset intersection ``|p ∩ g|`` of two rows becomes the
number of tokens they share: a dot product of 0/1 incidence vectors. Sparse matrix products
then count the overlaps of many row pairs at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

from bench.metrics.normalize import Row


class _Marker:
    """Private sentinels that no normalised cell value can be equal to."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}>"


_REPEAT = _Marker("repeat")
_EMPTY_ROW = _Marker("empty row")


@dataclass(frozen=True)
class TokenizedRows:
    """Two results over one vocabulary of tokens.

    Attributes:
        pred: n × V 0/1 incidence matrix (CSR) of the predicted rows.
        gold: m × V 0/1 incidence matrix (CSR) of the gold rows.
        pred_sizes: Number of values in each predicted row (an empty row counts 1).
        gold_sizes: Number of values in each gold row (an empty row counts 1).
    """

    pred: sparse.csr_array
    gold: sparse.csr_array
    pred_sizes: np.ndarray
    gold_sizes: np.ndarray

    def pair_bound(self) -> int:
        """Upper bound on the number of row pairs sharing a token: sum over tokens of df·df."""
        df_pred = np.bincount(self.pred.indices, minlength=self.pred.shape[1])
        df_gold = np.bincount(self.gold.indices, minlength=self.gold.shape[1])
        return int(np.dot(df_pred.astype(np.int64), df_gold.astype(np.int64)))

    def overlaps(self) -> sparse.coo_array:
        """|p ∩ g| for every row pair sharing at least one value (sparse, n × m)."""
        return sparse.coo_array(self.pred @ self.gold.T)


def pair_f_beta(overlap: Any, pred_size: Any, gold_size: Any, beta: float) -> Any:
    """Row F-β of row pairs from their overlap and sizes (numpy broadcasting).

    With P = c/|p| and R = c/|g|, (1+β²)·P·R / (β²·P + R) simplifies to
    (1+β²)·c / (|p| + β²·|g|), which is 0 when c is 0 and 1 for identical rows.
    """
    b2 = beta * beta
    return (1.0 + b2) * overlap / (pred_size + b2 * gold_size)


def tokenize(pred: Sequence[Row], gold: Sequence[Row]) -> TokenizedRows:
    """Build the incidence matrices of two lists of normalised rows."""
    vocabulary: dict[Any, int] = {}
    pred_matrix, pred_sizes = _incidence(pred, vocabulary)
    gold_matrix, gold_sizes = _incidence(gold, vocabulary)
    width = max(len(vocabulary), 1)
    pred_matrix.resize((len(pred), width))
    gold_matrix.resize((len(gold), width))
    return TokenizedRows(pred_matrix, gold_matrix, pred_sizes, gold_sizes)


def _incidence(
    rows: Sequence[Row], vocabulary: dict[Any, int]
) -> tuple[sparse.csr_array, np.ndarray]:
    indices: list[int] = []
    indptr = [0]
    for row in rows:
        if not row:
            row = (_EMPTY_ROW,)  # two empty rows share this token, so they score 1
        tokens = row if len(set(row)) == len(row) else _repeats_marked(row)
        indices.extend(vocabulary.setdefault(token, len(vocabulary)) for token in tokens)
        indptr.append(len(indices))
    idx = np.asarray(indices, dtype=np.int64)
    ptr = np.asarray(indptr, dtype=np.int64)
    data = np.ones(len(idx), dtype=np.float64)
    matrix = sparse.csr_array((data, idx, ptr), shape=(len(rows), max(len(vocabulary), 1)))
    return matrix, np.diff(ptr).astype(np.float64)


def _repeats_marked(row: Row) -> Row:
    """The k-th repeat (k ≥ 1) of a value becomes the token ``(_REPEAT, value, k)``."""
    seen: dict[Any, int] = {}
    tokens = []
    for value in row:
        k = seen[value] = seen.get(value, -1) + 1
        tokens.append(value if k == 0 else (_REPEAT, value, k))
    return tuple(tokens)
