"""The curation score of a training tuple: S = αH + βQ + γV + B, made concrete.

A tuple enters curation only when its target SQL executed read-only on its database (the
builder checks every one; those that fail are dropped and counted, whatever their score).
Then, each term in [0, 1]:

- **H, hardness**: ``1 - BF-β`` of the base student's own answer to the question, when the
  caller gives it (``hardness``: experience id → the base student's BF-β); 0.5 when unknown.
  Hard questions (the base gets them wrong) come first.
- **Q, quality**: the mean of the signals recorded on the experience: the teacher's
  agreement (the vote share of a mined question) and the CoT check (1 when a CoT-profiling
  check passed, 0 when it failed); 0.5 when neither is recorded.
- **V, diversity**: ``1 / k`` for the k-th tuple of its SQL skeleton, tuples of one skeleton
  taken best first (by αH + βQ + B); past ``max_per_skeleton`` a tuple is dropped as a
  near-duplicate. The same question with the same SQL twice is dropped as a duplicate.
- **B, source trust** (a bonus, not weighted): human 0.3 > mined 0.15 > synthetic 0.

Defaults: α = 0.2, β = 0.3, γ = 0.2, keep S ≥ 0.35. A human tuple with nothing recorded
scores 0.1 + 0.15 + 0.2 + 0.3 = 0.75; the third synthetic tuple of a skeleton
0.1 + 0.15 + 0.067 = 0.32 and is dropped. The manifest reports the kept share and why the
others were dropped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

TRUST = {"human": 0.3, "mined": 0.15, "synthetic": 0.0}
UNKNOWN = 0.5


class Scorable(Protocol):
    id: str
    source: str
    skeleton: str
    question: str
    sql: str
    vote_share: float | None
    cot_checked: bool | None


@dataclass(frozen=True)
class CurationWeights:
    """α, β, γ, the per-source bonus B, the threshold and the skeleton cap."""

    alpha: float = 0.2
    beta: float = 0.3
    gamma: float = 0.2
    trust: Mapping[str, float] = field(default_factory=lambda: dict(TRUST))
    min_score: float = 0.35
    max_per_skeleton: int = 8

    def describe(self) -> dict[str, object]:
        return {
            "formula": "S = alpha*H + beta*Q + gamma*V + B",
            "alpha": self.alpha,
            "beta": self.beta,
            "gamma": self.gamma,
            "trust": dict(self.trust),
            "min_score": self.min_score,
            "max_per_skeleton": self.max_per_skeleton,
        }


@dataclass(frozen=True)
class Score:
    """The terms of one tuple's score, and the verdict."""

    hardness: float
    quality: float
    diversity: float
    trust: float
    total: float
    kept: bool
    reason: str = ""  # why it was dropped: duplicate, skeleton_cap or low_score

    def as_dict(self) -> dict[str, object]:
        return {
            "H": round(self.hardness, 4),
            "Q": round(self.quality, 4),
            "V": round(self.diversity, 4),
            "B": self.trust,
            "S": round(self.total, 4),
            "kept": self.kept,
            **({"dropped": self.reason} if self.reason else {}),
        }


def quality(item: Scorable) -> float:
    """Q: the mean of the recorded vote share and CoT check, else :data:`UNKNOWN`."""
    signals = []
    if item.vote_share is not None:
        signals.append(float(item.vote_share))
    if item.cot_checked is not None:
        signals.append(1.0 if item.cot_checked else 0.0)
    return sum(signals) / len(signals) if signals else UNKNOWN


def curate(
    items: Sequence[Scorable],
    weights: CurationWeights | None = None,
    hardness: Mapping[str, float] | None = None,
) -> dict[str, Score]:
    """Score every item (id → :class:`Score`; see the module docstring)."""
    w = weights or CurationWeights()
    hardness = hardness or {}

    def base(item: Scorable) -> tuple[float, float, float]:
        bf = hardness.get(item.id)
        h = UNKNOWN if bf is None else 1.0 - max(0.0, min(1.0, float(bf)))
        return h, quality(item), float(w.trust.get(item.source, 0.0))

    parts = {item.id: base(item) for item in items}
    partial = {uid: w.alpha * h + w.beta * q + b for uid, (h, q, b) in parts.items()}
    ordered = sorted(items, key=lambda i: (-partial[i.id], i.id))
    per_skeleton: Counter[str] = Counter()
    seen: set[tuple[str, str]] = set()
    scores: dict[str, Score] = {}
    for item in ordered:
        h, q, b = parts[item.id]
        pair = (" ".join(item.question.lower().split()), " ".join(item.sql.split()))
        per_skeleton[item.skeleton] += 1
        k = per_skeleton[item.skeleton]
        v = 1.0 / k
        total = partial[item.id] + w.gamma * v
        reason = ""
        if pair in seen:
            reason = "duplicate"
        elif k > w.max_per_skeleton:
            reason = "skeleton_cap"
        elif total < w.min_score:
            reason = "low_score"
        if reason:
            per_skeleton[item.skeleton] -= 1
        else:
            seen.add(pair)
        scores[item.id] = Score(h, q, v, b, total, not reason, reason)
    return scores
