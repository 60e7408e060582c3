"""The pipeline's models as cascade tiers: which model draws how many samples, how.

``ModelTier`` is what a caller configures (a model, its sample budget, sampling overrides);
:func:`build_cascade` turns the pipeline's tiers into the :class:`~agents.sql.cascade.Cascade` one
question runs: every tier small to large when the question asks for the cascade, otherwise
the default model (the last tier) alone drawing ``n`` candidates and voting.

With a ``stop_rule`` (adaptive sampling), ``n`` is a budget: the default model draws its
greedy answer alone and, when the rule says it is not confident enough, the rest of the
budget decoded together (on two cores four replies decoded together cost about 2.9 times
one, drawn one at a time 4 times: an unsure answer costs 1 + 2.9 instead of 5); a cascade's
tiers draw one sample at a time while the rule says the answer is unsure.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from agents.llm.base import LLM
from agents.llm.variants import together_capacity
from agents.sql.cascade import Cascade, StopRule, Tier
from agents.sql.generate import SqlGenerator
from agents.sql.refine import Refiner

if TYPE_CHECKING:
    from agents.pipeline_options import PipelineOptions
    from agents.sql.predicates import PredicateChecker
    from kb.target.database import Database


@dataclass
class ModelTier:
    """A model of the cascade, small to large; the last one is the default model.

    ``temperature`` and ``max_tokens`` override the pipeline's sampling options for this model
    (None: as ``PipelineOptions.generate`` says). A small tier sampled cooler agrees with itself
    more often and rambles less, which is what makes escalation rare and the tier cheap.
    ``together``: samples drawn in one call. None: a voting tier draws as many as the model
    decodes together (:mod:`agents.llm.variants`), a cascade tier one at a time: on a CPU two
    replies decoded together cost about two decoding steps each step (0.5B and 1.5B on 2
    cores: 2.06x and 1.94x one reply; five: 4.08x and 3.45x), and one at a time lets a failed
    greedy answer escalate without drawing the sample that could no longer agree.
    """

    name: str
    llm: LLM
    samples: int = 2
    parallel: int = 1
    temperature: float | None = None
    max_tokens: int | None = None
    together: int | None = None


def build_cascade(
    tiers: list[ModelTier],
    options: PipelineOptions,
    *,
    cascade: bool,
    n: int,
    database: Database,
    checker: PredicateChecker,
    stop_rule: StopRule | None = None,
) -> Cascade:
    """The tiers one question runs (see the module docstring)."""
    adaptive = stop_rule is not None
    if cascade and len(tiers) > 1:
        chosen = [
            _tier(
                t,
                max(2, t.samples),
                options,
                database,
                checker,
                stop_early=True,
                model_repairs=options.cascade_small_repairs,
                fence_samples=options.cascade_small_fenced,
            )
            for t in tiers[:-1]
        ]
        last_samples = max(n, options.cascade_last_samples) if adaptive else None
        last = _tier(
            tiers[-1],
            last_samples or options.cascade_last_samples,
            options,
            database,
            checker,
            stop_early=True,
            one_at_a_time=adaptive,
        )
        chosen.append(last)
    else:
        # adaptive: the greedy answer alone, then the rest of the budget decoded together
        chosen = [_tier(tiers[-1], n, options, database, checker, stop_early=False)]
    return Cascade(
        chosen,
        dialect=database.dialect,
        tie_break=options.tie_break,
        plain_fallback=options.plain_fallback,
        stop_rule=stop_rule,
    )


def _tier(
    spec: ModelTier,
    samples: int,
    options: PipelineOptions,
    database: Database,
    checker: PredicateChecker,
    *,
    stop_early: bool,
    model_repairs: bool = True,
    fence_samples: bool | None = None,
    one_at_a_time: bool = False,
) -> Tier:
    generate = options.generate
    if fence_samples is not None:
        generate = replace(generate, fence_samples=fence_samples)
    if spec.temperature is not None:
        generate = replace(generate, temperature=spec.temperature)
    if spec.max_tokens is not None:
        generate = replace(generate, max_tokens=spec.max_tokens)
    generator = SqlGenerator(spec.llm, database.dialect, generate)
    refine = replace(options.refine, model_repairs=model_repairs and options.refine.model_repairs)
    refiner = Refiner(database, spec.llm, checker, refine)
    together = spec.together
    if together is None:
        # adaptive sampling looks at the answer after each sample: one at a time
        together = 1 if stop_early or one_at_a_time else together_capacity(spec.llm)
    return Tier(
        spec.name,
        generator,
        refiner,
        samples=samples,
        parallel=spec.parallel,
        together=max(1, min(together, samples)),
        stop_early=stop_early,
    )
