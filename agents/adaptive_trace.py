"""Adaptive sampling's stop rule, with a trace of each decision it took.

With adaptive sampling the pipeline draws the greedy answer alone, then more samples only
while the answer's calibrated confidence is under the target (:mod:`agents.confidence`).
:class:`AdaptiveTrace` makes that rule for one question and records every time it was
consulted: how many candidates there were, the confidence they gave and when (seconds since
the question was asked). The first check is the greedy answer's, so a trace says why a
question drew more samples, and a benchmark can tell what any other target would have done
on the same answers (``bench/adaptive_sweep.py``). The pipeline shows it in the ``generate``
stage's ``adaptive`` detail.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from agents.answer import Candidate
from agents.sql.cascade import StopRule
from agents.sql.vote import VoteOutcome

Assess = Callable[[Sequence[Candidate], VoteOutcome, int], float]
"""The confidence of candidates with their vote, after that many tiers were asked."""


@dataclass
class AdaptiveTrace:
    """The checks of one question's stop rule; ``started`` is its ``time.perf_counter()``
    at the start of ``ask``."""

    started: float
    checks: list[dict[str, float]] = field(default_factory=list)

    def rule(
        self,
        assess: Assess,
        target: float,
        *,
        tiers: int = 1,
        escalation_target: float | None = None,
    ) -> StopRule:
        """Stop once ``assess`` reaches ``target``; each check is recorded.

        In a cascade of ``tiers`` tiers, a tier before the last stops (answers instead of
        escalating) only at ``escalation_target`` (None: ``target``): a smaller model's answer
        reads more confident than it is, so it needs more than the last tier does."""

        def stop(found: Sequence[Candidate], voted: VoteOutcome, tiers_asked: int) -> bool:
            confidence = assess(found, voted, tiers_asked)
            needed = target
            if escalation_target is not None and tiers_asked < tiers:
                needed = escalation_target
            self.checks.append(
                {
                    "samples": float(len(found)),
                    "confidence": round(confidence, 4),
                    "at_s": round(time.perf_counter() - self.started, 3),
                }
            )
            return confidence >= needed

        return stop
