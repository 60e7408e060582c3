"""Warming a pipeline's models with the prompt prefix every question on its database shares.

A question's SQL-gen prompt starts with the system prompt and the schema; for a database shown
whole, or as one overview, that text is the same for every question. Asking the models for
one token after it leaves its evaluation in their context, and in a llama.cpp prompt cache
(:mod:`agents.llm.prompt_cache`) on disk, so the first real question prefills only its own
part. ``almanac init`` and the server's start-up call :func:`warm_pipeline`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from agents.llm.base import LLMError
from agents.pipeline import Pipeline
from agents.rag.agent import RagContext
from agents.sql.generate import SqlGenerator, fence_options
from agents.sql.tiers import ModelTier
from indices.evidence import Evidence

log = logging.getLogger(__name__)


@dataclass
class WarmReport:
    """What warming did: the shared prefix's size, the models warmed and how long it took."""

    schema_chars: int = 0
    models: list[str] = field(default_factory=list)
    prompt_tokens: int = 0
    seconds: float = 0.0
    error: str | None = None


def shared_schema(pipeline: Pipeline) -> str | None:
    """The schema every question on the pipeline's database sees, or None when sliced per
    question (a database too large to show whole, without the overview)."""
    rag = pipeline.rag
    if not pipeline.catalog.tables:
        return None  # not profiled: questions are refused, nothing to warm
    sliced = rag.schema_slice()
    if rag.shows_overview or len(sliced.full) == len(pipeline.catalog.tables):
        return sliced.text
    return None


def warm_pipeline(pipeline: Pipeline, tiers: Sequence[ModelTier] | None = None) -> WarmReport:
    """Prefill every tier's model with the shared prompt prefix (a no-op when there is none).

    ``tiers``: the models to call, when not the pipeline's own (the server passes its tiers
    wrapped to call with the warm-up's low priority). A model that fails is logged and
    reported, never raised: warming only saves time.
    """
    report = WarmReport()
    started = time.perf_counter()
    schema = shared_schema(pipeline)
    if schema is None:
        return report
    report.schema_chars = len(schema)
    bare = RagContext("", pipeline.database_name, Evidence(""), schema)  # no question parts
    messages = SqlGenerator(pipeline.default_llm, pipeline.dialect).messages(bare)
    fenced = fence_options(pipeline.options.generate.fence_greedy)
    seen: set[int] = set()
    for tier in pipeline.tiers if tiers is None else tiers:
        if id(tier.llm) in seen:
            continue
        seen.add(id(tier.llm))
        try:
            reply = tier.llm.chat(messages, max_tokens=1, temperature=0.0, **fenced)
        except LLMError as exc:
            log.warning("warming %s failed: %s", tier.llm.name, exc)
            report.error = f"{tier.llm.name}: {exc}"
            continue
        report.models.append(tier.llm.name)
        report.prompt_tokens += reply.prompt_tokens
    report.seconds = time.perf_counter() - started
    log.info(
        "warmed %s on %s: %d prompt tokens in %.1f s",
        ", ".join(report.models) or "no model",
        pipeline.database_name,
        report.prompt_tokens,
        report.seconds,
    )
    return report
