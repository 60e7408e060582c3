"""Model tiers from small to large, and the sampling loop every answer goes through.

A ``Tier`` is one model (its generator and refiner) and how many candidates it may draw. The
``Cascade`` asks the tiers in order. Within a tier, candidates are drawn (greedy first, then
sampled), executed and repaired; as soon as two candidates of the tier agree on a non-empty
result, the cascade answers with that tier and cancels the samples it no longer needs (queued
samples never start; running ones are discarded). A tier whose candidates do not agree hands
over to the next one. The last tier (or a single tier, which is plain test-time scaling with
``stop_early=False``) answers with the majority vote over its candidates, falling back to the
earlier tiers' candidates when all of its own failed.

When every candidate failed even after repair, the last tier gets one more try with a plain
prompt (``plain_fallback``): the schema slice and the question's context, without the hints
and examples. Evidence sometimes misleads a small model into joins and columns the question
does not need; the plain answer is marked (tier ``<name>:plain``) and its confidence halved.

With a ``stop_rule`` (adaptive sampling, :mod:`agents.confidence`), a tier draws its greedy
answer first and more samples only while the best answer so far is not confident enough
(``stop_rule(candidates, their_vote, tiers_asked)``), up to its budget; a tier that used its budget
without becoming confident escalates to the next, exactly as a tier whose samples did not
agree. Two agreeing samples no longer end a tier by themselves: the rule decides. A tier before
the last needs both: two of its samples agreeing and the rule satisfied (the pipeline's rule
asks such a tier for ``ConfidenceOptions.escalation_target``, not the target). The calibrator is
fitted on the default model's answers, so a smaller model's greedy answer alone reads more
confident than it is (AutoFin test 60: a small tier answering on its greedy answer alone took
22 of the 60 questions and got 15 wrong).

Once the question's deadline has passed (``RefineOptions.deadline``), no sample is drawn, no
tier is escalated to and no plain retry starts: the vote is over what there is.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from agents.answer import Candidate
from agents.rag.agent import RagContext
from agents.sql.generate import SqlGenerator
from agents.sql.refine import Refiner
from agents.sql.tier_run import TierRun
from agents.sql.vote import TieBreak, VoteOutcome, vote
from ukf import QueryContext

log = logging.getLogger(__name__)
StopRule = Callable[[Sequence[Candidate], VoteOutcome, int], bool]
"""Adaptive sampling's rule: whether the answer the candidates so far vote for (their vote,
with the cascade's tie-break) is confident enough, given the number of tiers asked (see the
module docstring)."""


@dataclass
class Tier:
    """One model and its sampling budget.

    Attributes:
        name: shown in answers ("0.5b", "1.5b", "gpt-4o", ...).
        generator: writes candidates with the tier's model.
        refiner: executes and repairs them (with the same model).
        samples: candidates drawn at most (>= 2 in a cascade, so two can agree).
        parallel: draws in flight at once (1 for an in-process model).
        together: samples asked of the model in one draw (an in-process llama.cpp model
            decodes them in one batch, see :mod:`agents.llm.variants`); they are then
            executed and repaired one by one.
        stop_early: answer as soon as two candidates agree.
        confident: adaptive sampling's rule (set by the cascade from its ``stop_rule``): the
            winner among the candidates drawn so far when it is confident enough, else None.
    """

    name: str
    generator: SqlGenerator
    refiner: Refiner
    samples: int = 2
    parallel: int = 1
    together: int = 1
    stop_early: bool = True
    confident: Callable[[list[Candidate]], Candidate | None] | None = None


@dataclass
class CascadeOutcome:
    winner: Candidate | None
    confidence: float
    tier: str | None
    candidates: list[Candidate] = field(default_factory=list)
    tiers_tried: list[str] = field(default_factory=list)
    cancelled: int = 0
    vote: VoteOutcome | None = None
    seconds_by_tier: dict[str, float] = field(default_factory=dict)
    plain_fallback: bool = False  # the answer came from the plain-prompt retry


class Cascade:
    """Runs ``tiers`` in order (see the module docstring).

    Args:
        tiers: small to large; at least one.
        dialect: for parsing ORDER BY in the vote.
        tie_break: tie-break of the final vote.
        plain_fallback: retry once with a plain prompt when every candidate failed.
        stop_rule: adaptive sampling (see the module docstring); None: the samples'
            agreement decides, as ``Tier.stop_early`` says.
    """

    def __init__(
        self,
        tiers: list[Tier],
        *,
        dialect: str,
        tie_break: TieBreak = "first",
        plain_fallback: bool = True,
        stop_rule: StopRule | None = None,
    ) -> None:
        if not tiers:
            raise ValueError("a cascade needs at least one tier")
        for tier in tiers[:-1]:
            if tier.samples < 2:
                raise ValueError(f"tier {tier.name!r} must draw >= 2 samples to be able to agree")
        self.tiers, self.dialect, self.tie_break = tiers, dialect, tie_break
        self.plain_fallback = plain_fallback
        self.stop_rule = stop_rule

    def run(
        self,
        rag: RagContext,
        context: QueryContext | None = None,
        *,
        on_candidate: Callable[[Candidate], None] | None = None,
    ) -> CascadeOutcome:
        outcome = CascadeOutcome(None, 0.0, None)
        for position, tier in enumerate(self.tiers):
            last = position == len(self.tiers) - 1
            started = time.perf_counter()
            outcome.tiers_tried.append(tier.name)
            messages = tier.generator.messages(rag, context)
            if self.stop_rule is not None:
                rule = self._confident(position + 1, agreement=not last)
                tier = replace(tier, confident=rule)
            run = TierRun(
                tier, messages, dialect=self.dialect, on_candidate=on_candidate, escalates=not last
            ).run()
            found, agreed, cancelled = run.candidates, run.agreed, run.cancelled
            outcome.seconds_by_tier[tier.name] = time.perf_counter() - started
            outcome.candidates.extend(found)
            outcome.cancelled += cancelled
            if agreed is not None:
                result = vote(found, tie_break=self.tie_break, dialect=self.dialect)
                outcome.winner, outcome.tier, outcome.vote = agreed, tier.name, result
                outcome.confidence = result.confidence
                return outcome
            if last or tier.refiner.past_deadline():  # no tier starts after the deadline
                result = vote(found, tie_break=self.tie_break, dialect=self.dialect)
                if result.winner is None and len(outcome.candidates) > len(found):
                    result = vote(
                        outcome.candidates, tie_break=self.tie_break, dialect=self.dialect
                    )
                outcome.vote, outcome.winner = result, result.winner
                outcome.confidence = result.confidence
                outcome.tier = result.winner.tier if result.winner else None
                retry = self.plain_fallback and not tier.refiner.past_deadline()
                if result.winner is None and retry and _has_evidence(rag):
                    self._plain(tier, rag, context, outcome, on_candidate)
                return outcome
            log.info("tier %s did not agree on %r; escalating", tier.name, rag.question)
        return outcome

    def _confident(
        self, tiers_asked: int, *, agreement: bool
    ) -> Callable[[list[Candidate]], Candidate | None]:
        """A tier's adaptive rule: its candidates' winner once the stop rule is satisfied
        (and, with ``agreement``, once two of them agree on it)."""
        rule = self.stop_rule
        assert rule is not None

        def confident(found: list[Candidate]) -> Candidate | None:
            outcome = vote(found, tie_break=self.tie_break, dialect=self.dialect)
            if agreement and outcome.support < 2:
                return None
            return outcome.winner if rule(found, outcome, tiers_asked) else None

        return confident

    def _plain(
        self,
        tier: Tier,
        rag: RagContext,
        context: QueryContext | None,
        outcome: CascadeOutcome,
        on_candidate: Callable[[Candidate], None] | None,
    ) -> None:
        """One greedy candidate from a prompt without hints and examples, refined."""
        log.info("every candidate failed on %r; retrying with a plain prompt", rag.question)
        started = time.perf_counter()
        plain = replace(rag, hints=[], examples=[], summary="")
        messages = tier.generator.messages(plain, context)
        candidate = tier.generator.sample(messages, 0)
        generated = time.perf_counter()
        name = f"{tier.name}:plain"
        candidate.tier = name
        refined = tier.refiner.refine(candidate, messages)
        refined.tier = name
        refined.generate_seconds = generated - started
        refined.refine_seconds = time.perf_counter() - generated
        outcome.seconds_by_tier[name] = time.perf_counter() - started
        outcome.candidates.append(refined)
        if on_candidate is not None:
            on_candidate(refined)
        result = vote([refined], tie_break=self.tie_break, dialect=self.dialect)
        if result.winner is not None:
            outcome.vote, outcome.winner, outcome.tier = result, result.winner, name
            outcome.confidence = result.confidence / 2
            outcome.plain_fallback = True


def _has_evidence(rag: RagContext) -> bool:
    """A plain prompt differs from the one that failed only when there was evidence."""
    return bool(rag.hints or rag.examples or rag.summary)
