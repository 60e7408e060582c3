"""The pipeline's options: budgets, sampling, refinement and cascade behaviour.

In a module of their own so that :mod:`agents.sql.tiers` (which builds a question's cascade
from them) and :mod:`agents.pipeline` (which owns them) do not import each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agents.rag.agent import RagOptions
from agents.sql.generate import GenerateOptions
from agents.sql.refine import RefineOptions
from agents.sql.vote import TieBreak


@dataclass
class PipelineOptions:
    """Options of :class:`agents.pipeline.Pipeline` (per pipeline, not per question)."""

    rag: RagOptions = field(default_factory=RagOptions)
    generate: GenerateOptions = field(default_factory=GenerateOptions)
    refine: RefineOptions = field(default_factory=RefineOptions)
    tie_break: TieBreak = "first"
    log_questions: bool = True
    cascade_last_samples: int = 1
    # the tiers before the last repair without their model: a small model's repairs cost more
    # than asking the next tier (0.5B on Spider: 26 s of repairs, then escalated anyway)
    cascade_small_repairs: bool = False
    # the tiers before the last fence their temperature samples too (GenerateOptions)
    cascade_small_fenced: bool = True
    plain_fallback: bool = True
    # distinct users whose corrections of a question must agree before it is shared
    # beyond its askers (agents.experience_review; 1: shared at once)
    feedback_agreement: int = 2
    # blame that sends a used entry to review when it also exceeds twice its credit
    # (agents.learn.credit.BlameThreshold)
    blame_threshold: int = 3
    # answer from an active mined query template, with no model call, when the first
    # ``template_examples`` worked examples share it (agents.sql.template_fill)
    templates: bool = True
    template_examples: int = 3
