"""A similarity learned from labeled experiences: whitening and discriminant axes by skeleton.

Labeled experiences whose SQL shares a skeleton (:mod:`indices.experience_skeleton`) are
questions that need the same query shape. The directions in which such questions differ from
one another (the entities they name, paraphrases) are noise for finding a few-shot example;
the directions that separate skeletons are signal. The metric

1. whitens the embeddings by the pooled within-skeleton covariance Σw (``x → Σw^-½ x``):
   shrinks the first kind of direction and stretches the second; Σw is shrunk towards a
   multiple of the identity, so few labeled experiences give a map close to plain cosine;
2. keeps the ``dimensions`` whitened axes along which the skeletons' means spread most
   (Fisher's linear discriminant), centred on the experiences' mean;

and compares by cosine. It is fitted in closed form (two symmetric eigenproblems in the
embedding dimension), so refitting as experiences accumulate is cheap.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

log = logging.getLogger(__name__)
DEFAULT_SHRINKAGE = 0.03
DEFAULT_DIMENSIONS = 48  # at least; a quarter of the skeletons when there are more


@dataclass(frozen=True)
class SkeletonMetric:
    """Similarity is the cosine of ``(x - centre) @ matrix`` (no matrix: plain cosine).

    Attributes:
        matrix: The ``(d, k)`` map, or None for the identity.
        centre: Subtracted before mapping (the fitted experiences' mean), or None.
        groups: Skeletons with at least two experiences when fitted.
        samples: Labeled experiences it was fitted on.
    """

    matrix: np.ndarray | None = None
    centre: np.ndarray | None = None
    groups: int = 0
    samples: int = 0

    @classmethod
    def fit(
        cls,
        vectors: np.ndarray,
        skeletons: Sequence[str],
        *,
        shrinkage: float = DEFAULT_SHRINKAGE,
        dimensions: int | None = DEFAULT_DIMENSIONS,
    ) -> SkeletonMetric:
        """Learn the map from labeled experiences.

        Args:
            vectors: ``(n, d)`` embeddings of labeled experiences.
            skeletons: The SQL skeleton of each row.
            shrinkage: Weight of the identity (scaled to Σw's mean variance), in ``(0, 1]``.
            dimensions: Discriminant axes kept (at least this many, a quarter of the distinct
                skeletons when that is more); None, or fewer skeletons than axes, keeps the
                whitened space whole.

        Returns:
            The identity when no skeleton has two experiences (nothing to learn from).

        Raises:
            ValueError: On mismatched lengths or a shrinkage outside ``(0, 1]``.
        """
        vectors = np.asarray(vectors, dtype=np.float64)
        if len(vectors) != len(skeletons):
            raise ValueError(f"{len(vectors)} vectors but {len(skeletons)} skeletons")
        if not 0 < shrinkage <= 1:
            raise ValueError(f"shrinkage must be in (0, 1], got {shrinkage}")
        codes, distinct = _codes(skeletons)
        sizes = np.bincount(codes)
        repeated = sizes[codes] > 1  # rows of skeletons with two or more experiences
        groups = int((sizes > 1).sum())
        if not groups:
            return cls(groups=0, samples=len(skeletons))
        dimension = vectors.shape[1]
        means = np.zeros((len(distinct), dimension))
        np.add.at(means, codes, vectors)
        means /= sizes[:, None]
        residuals = (vectors - means[codes])[repeated]
        within = residuals.T @ residuals / (len(residuals) - groups)
        scale = np.trace(within) / dimension
        if scale <= 0:  # every group holds identical vectors: nothing varies within skeletons
            return cls(groups=groups, samples=len(skeletons))
        within = (1 - shrinkage) * within + shrinkage * scale * np.eye(dimension)
        values, basis = np.linalg.eigh(within)
        matrix = (basis * values**-0.5) @ basis.T
        centre = vectors.mean(axis=0)
        if dimensions is not None:
            keep = max(dimensions, len(distinct) // 4)
            if keep < min(dimension, len(distinct) - 1):  # else the means span too few axes
                spread = (means - centre) @ matrix  # skeleton means, whitened
                between = (spread * sizes[:, None]).T @ spread / len(vectors)
                _, axes = np.linalg.eigh(between)  # ascending
                matrix = matrix @ axes[:, ::-1][:, :keep]
        log.info(
            "skeleton metric: %d experiences, %d skeletons (%d with 2+), %d dimensions",
            len(skeletons),
            len(distinct),
            groups,
            matrix.shape[1],
        )
        return cls(matrix.astype(np.float32), centre.astype(np.float32), groups, len(skeletons))

    def transform(self, vectors: np.ndarray) -> np.ndarray:
        """Rows mapped and L2-normalised (zero rows stay zero)."""
        vectors = np.asarray(vectors, dtype=np.float32)
        if self.matrix is not None:
            centred = vectors - self.centre if self.centre is not None else vectors
            vectors = centred @ self.matrix
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)

    @property
    def dimension(self) -> int | None:
        """Width of the mapped vectors (None: that of the input)."""
        return None if self.matrix is None else self.matrix.shape[1]


def _codes(labels: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """Integer codes of ``labels`` and the distinct labels, in first-seen order."""
    index: dict[str, int] = {}
    codes = np.array([index.setdefault(label, len(index)) for label in labels], dtype=np.int64)
    return codes, list(index)
