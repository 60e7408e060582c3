"""Train/validation split by database and by SQL skeleton, so no near-duplicate leaks.

The rule (recorded in the manifest as :meth:`SplitRule.describe`):

1. every tuple of a database named in ``validation_databases`` is validation;
2. of the remaining SQL skeletons (literals masked and the text normalised by sqlglot,
   :func:`indices.experience_skeleton.sql_skeleton`), the ``validation_share`` with the
   lowest ``sha256(seed + skeleton)`` are validation (at least one when there are two or
   more skeletons and the share is above zero);
3. a skeleton is validation as a whole: any tuple whose skeleton is a validation skeleton is
   validation, whatever its database.

So no validation tuple shares a skeleton with a training tuple, and the split is the same
for the same skeletons whatever order the tuples come in.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol


class Splittable(Protocol):
    database: str
    skeleton: str


@dataclass(frozen=True)
class SplitRule:
    """How tuples are split (module docstring)."""

    validation_share: float = 0.1
    validation_databases: tuple[str, ...] = field(default_factory=tuple)
    seed: str = "almanac-distill"

    def __post_init__(self) -> None:
        if not 0.0 <= self.validation_share < 1.0:
            raise ValueError(f"validation_share must be in [0, 1), got {self.validation_share}")

    def describe(self) -> dict[str, object]:
        return {
            "by": ["database", "sql_skeleton"],
            "validation_share": self.validation_share,
            "validation_databases": list(self.validation_databases),
            "seed": self.seed,
            "skeleton": "indices.experience_skeleton.sql_skeleton (literals -> ?, sqlglot)",
        }

    def _rank(self, skeleton: str) -> str:
        return hashlib.sha256(f"{self.seed}\x00{skeleton}".encode()).hexdigest()

    def validation_skeletons(self, tuples: Sequence[Splittable]) -> set[str]:
        """The skeletons that go to validation."""
        held = set(self.validation_databases)
        chosen = {t.skeleton for t in tuples if t.database in held}
        rest = sorted({t.skeleton for t in tuples} - chosen, key=self._rank)
        if self.validation_share > 0 and len(rest) >= 2:
            count = max(1, math.floor(len(rest) * self.validation_share))
            chosen.update(rest[: min(count, len(rest) - 1)])
        return chosen

    def split(self, tuples: Sequence[Splittable]) -> tuple[list, list]:
        """(train, validation), each in the input order."""
        held = self.validation_skeletons(tuples)
        train = [t for t in tuples if t.skeleton not in held]
        validation = [t for t in tuples if t.skeleton in held]
        return train, validation
